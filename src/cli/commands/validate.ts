/** `vigil validate --config FILE`: the setup editor's check (DESIGN 1): every error, exit 1. */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { DEFAULT_ROLES } from "../../auth/roles.js";
import { formatSetupIssues, loadSetupFile, SetupError } from "../../config/load-setup.js";
import { isRecord } from "../../config/setup-issues.js";
import { readSetupYaml } from "../../config/setup-yaml.js";
import { type BindingLoad, kerberosBindingError, loadKerberosBinding } from "../../hub/auth/kerberos.js";

/** What `vigil validate` found: whether the file is usable, and the text it prints. */
export interface ValidateReport {
  readonly ok: boolean;
  /**
   * `FILE: OK` when usable (`FILE: OK, a hub-only setup: …` for a setup of only `hub:`), followed
   * by one `note:` line per default worth knowing (an application key without `roles`); otherwise
   * one line per issue (`formatSetupIssues`), in file order.
   */
  readonly text: string;
}

/**
 * Checks a setup file with the same loader every command uses, so `validate` reports exactly what
 * would stop `vigil up|gateway|hub|probe --config FILE`; a setup that enables Kerberos is also
 * checked against this machine's `kerberos` binding (`binding`, default the real one), whose absence
 * stops the hub's start. A hub-only setup (only `hub:`) is OK, and the report says that only
 * `vigil hub` runs it. Errors other than a `SetupError` (a bug) are thrown.
 */
export function validateSetupFile(
  path: string,
  binding: () => BindingLoad = loadKerberosBinding,
): ValidateReport {
  let hubOnly: boolean;
  try {
    const setup = loadSetupFile(path, { hubOnly: true });
    hubOnly = setup.gateway === undefined;
    if (setup.hub.security.kerberos.enabled) {
      const load = binding();
      if (!load.ok)
        return {
          ok: false,
          text: `${path}:hub.security.kerberos.enabled: ${kerberosBindingError(load.reason)}`,
        };
    }
  } catch (error) {
    if (!(error instanceof SetupError)) throw error;
    return { ok: false, text: formatSetupIssues(error) };
  }
  const ok = hubOnly
    ? `${path}: OK, a hub-only setup: \`vigil hub\` runs it; \`vigil gateway\`, \`vigil up\` and \`vigil probe --config\` need the deployment's setup, with its 'gateway' section`
    : `${path}: OK`;
  return { ok: true, text: [ok, ...setupNotes(path)].join("\n") };
}

/**
 * Notes on a valid setup file: each application key written without `roles` gets the default
 * (DESIGN 5.4a), which is read-only; saying so spares the surprise of a 403 on backfill or snooze.
 */
function setupNotes(path: string): string[] {
  const { data, locate } = readSetupYaml(readFileSync(path, "utf8"), path);
  const hub = isRecord(data) ? data.hub : undefined;
  const security = isRecord(hub) ? hub.security : undefined;
  const keys = isRecord(security) && Array.isArray(security.appKeys) ? security.appKeys : [];
  const defaults = `[${DEFAULT_ROLES.join(", ")}]`;
  return keys.flatMap((key: unknown, index) => {
    if (!isRecord(key) || key.roles !== undefined) return [];
    const issue = locate({
      segments: ["hub", "security", "appKeys", index],
      message: `note: application key '${String(key.clientId)}' has no roles, so it gets the default ${defaults} (queries only); add roles: [read, write, operate] as it needs`,
    });
    return [formatSetupIssues(new SetupError([issue]))];
  });
}

/** Adds `validate --config FILE` to the `vigil` command: OK on stdout, or every issue on stderr and exit 1. */
export function registerValidate(program: Command): void {
  program
    .command("validate")
    .description("check a setup file and print every configuration error")
    .requiredOption("--config <file>", "setup file (YAML)")
    .action((options: { config: string }) => {
      const report = validateSetupFile(options.config);
      if (report.ok) {
        process.stdout.write(`${report.text}\n`);
      } else {
        process.stderr.write(`${report.text}\n`);
        process.exitCode = 1;
      }
    });
}
