/**
 * Fixtures of the severity engine tests: a setup with cell and headline rules, changes of its
 * dataviews, and a summary of the severity messages (each checked against schema/public-v2).
 */
import assert from "node:assert/strict";
import { parseSetup } from "../../../src/config/load-setup.js";
import { GatewayModel } from "../../../src/gateway/gateway-model.js";
import { Hierarchy } from "../../../src/gateway/hierarchy.js";
import { SeverityEngine } from "../../../src/gateway/severity/severity-engine.js";
import { type Change, encodeCells, type ProbeParameters } from "../../../src/link/protocol.js";
import type { PublicV2Message, SeverityMessage } from "../../../src/messages/types.js";
import { validateMessage } from "../../../src/messages/validate.js";

export const SETUP = `
gateway: { name: GW }
probes:
  - name: p1
    managedEntities:
      - name: me1
        samplers:
          - { name: s1, plugin: rest-api }
          - { name: log, plugin: fkm, source: { sampler: s1, stream: app }, keywords: [{ pattern: ERROR, severity: CRITICAL }] }
      - { name: me2, samplers: [{ name: s1, plugin: rest-api }] }
rules:
  - name: queue warning
    target: { managedEntity: "*", sampler: s1, dataview: "*", row: "*", column: queued }
    when: { operator: ">", value: 10 }
    severity: WARNING
  - name: queue critical
    target: { managedEntity: "*", sampler: s1, dataview: "*", row: "*", column: queued }
    when: { operator: ">", value: 100 }
    severity: CRITICAL
  - name: row limit
    target: { sampler: "*", headline: totalRows }
    when: { operator: ">=", value: 3 }
    severity: WARNING
`;
export const setup = parseSetup(SETUP);
export const T0 = Date.UTC(2026, 0, 1);
export const params: ProbeParameters = {
  osType: "Linux",
  HostName: "h",
  Port: "7136",
  OS: "Linux 6",
  Version: "0.1.0",
};

export const address = (managedEntity = "me1", dataview = "dv", sampler = "s1") => ({
  managedEntity,
  sampler,
  samplerType: "",
  dataview,
});

export function dataview(rows: [string, string][], me = "me1", dv = "dv"): Change {
  return {
    kind: "dataview",
    dataview: address(me, dv),
    at: T0,
    plugin: "rest-api",
    columns: ["name", "queued"],
    rows: rows.map(([name, queued]) => ({ name, cells: encodeCells([name, queued]) })),
    headlines: [
      ["samplingStatus", "OK"],
      ["totalRows", String(rows.length)],
    ],
  };
}

export const row = (name: string, queued: string, me = "me1", dv = "dv"): Change => ({
  kind: "row",
  dataview: address(me, dv),
  at: T0,
  name,
  cells: encodeCells([name, queued]),
});

/** `severity:<op>:<item path>=<severity>[<previous]` of the severity messages among `messages`. */
export function severities(messages: readonly PublicV2Message[]): string[] {
  for (const message of messages) {
    const result = validateMessage(message);
    assert.ok(result.ok, `invalid ${message.type}: ${result.ok ? "" : result.errors.join("; ")}`);
  }
  return messages
    .filter((m): m is SeverityMessage => m.type === "severity")
    .map((m) => {
      const t = m.data.target;
      const path =
        [t.probe, t.managedEntity, t.sampler, t.dataview, t.row, t.column]
          .filter((x) => x !== undefined)
          .join("/") || "GW";
      const prev = m.data.data.previousSeverity === undefined ? "" : `<${m.data.data.previousSeverity}`;
      return `${m.operation}:${path}=${m.data.data.severity}${prev}`;
    });
}

/** The hierarchy followed by the severity engine, as the gateway wires them (src/gateway/app.ts). */
export function modelOf(rules = setup.rules): GatewayModel<SeverityEngine> {
  const hierarchy = new Hierarchy(setup.gateway, setup.probes);
  const engine = new SeverityEngine({
    gateway: setup.gateway.name,
    rules,
    lookup: hierarchy,
    samplerSeverities: (probe, target, row) => hierarchy.samplerSeverities(probe, target, row),
  });
  return new GatewayModel(hierarchy, engine);
}

/** A hierarchy with events, its probe linked with `state`. */
export function linked(
  state: Change[],
  rules = setup.rules,
): { hierarchy: GatewayModel<SeverityEngine>; first: PublicV2Message[] } {
  const hierarchy = modelOf(rules);
  hierarchy.hello("p1", params);
  const first = hierarchy.state("p1", state, true, T0).messages;
  return { hierarchy, first };
}
