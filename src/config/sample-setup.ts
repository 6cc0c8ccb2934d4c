/**
 * The built-in setup `vigil up` uses without `--config` (DESIGN 1): one gateway publishing to the
 * embedded hub, one probe on the default ports with three managed entities, an fkm sampler reading
 * web-01's application log, rules that give the demo every severity, and a demo application key. `vigil up --demo` pushes data into
 * exactly these samplers.
 */
import { parseSetup } from "./load-setup.js";
import type { DeploymentSetup } from "./setup.js";

export const SAMPLE_SETUP_YAML = `# vigil sample setup: what \`vigil up\` runs without --config.
gateway:
  name: GW1
  publish:
    - memory

probes:
  - name: probe1
    hostname: 127.0.0.1          # default ports: 7136 (HTTP), 7137 (HTTPS, secure mode only)
    managedEntities:
      - name: web-01
        attributes: { Environment: prod, Region: emea }
        samplers:
          - &orders
            name: orders
            plugin: rest-api
            schema:
              columns:
                latency: { type: float64, unit: milliseconds }
                queued: { type: int64, unit: none }
                cpu: { type: float64, unit: percent }
          - name: errors
            plugin: fkm
            sampleInterval: 20     # seconds
            source: { sampler: orders, stream: app-log }
            keywords:
              - { pattern: "ERROR", severity: CRITICAL }
              - { pattern: "WARN", severity: WARNING }
      - name: web-02
        attributes: { Environment: prod, Region: amer }
        samplers:
          - *orders
      - name: db-01
        attributes: { Environment: staging, Region: emea }
        samplers:
          - *orders

rules:
  - name: queue too long
    target: { sampler: orders, dataview: queue, row: "*", column: queued }
    when: { operator: ">", value: 100 }
    severity: CRITICAL
  - name: slow
    target: { sampler: orders, row: "*", column: latency }
    when: { operator: ">", value: 250 }
    severity: WARNING
  # With the demo's data these give OK, WARNING, CRITICAL and UNKNOWN over time; cells no rule
  # targets (name) stay UNDEFINED.
  - name: queue building
    target: { sampler: orders, dataview: queue, row: "*", column: queued }
    when: { operator: ">", value: 60 }
    severity: WARNING
  - name: very slow
    target: { sampler: orders, row: "*", column: latency }
    when: { operator: ">", value: 350 }
    severity: CRITICAL
  - name: latency not measured
    target: { sampler: orders, row: "*", column: latency }
    when: { operator: "<", value: 20 }
    severity: UNKNOWN
  - name: cpu busy
    target: { sampler: orders, row: "*", column: cpu }
    when: { operator: ">", value: 80 }
    severity: WARNING
  - name: rows missing
    target: { sampler: orders, dataview: queue, headline: totalRows }
    when: { operator: "<", value: 4 }
    severity: WARNING

hub:
  security:
    enabled: true
    appKeys:
      - { clientId: demo, clientSecret: demo-secret, roles: [read, write, operate] }
`;

/**
 * Returns the sample setup, parsed and frozen: `parseSetup(SAMPLE_SETUP_YAML)` with every default
 * filled in (gateway port 7039, probe ports 7136/7137, hub port 8081, 300 s tokens). Relative paths
 * do not occur in it, so no base folder is needed.
 */
export function sampleSetup(): DeploymentSetup {
  return parseSetup(SAMPLE_SETUP_YAML, "(built-in sample setup)");
}
