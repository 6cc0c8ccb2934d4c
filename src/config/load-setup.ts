/**
 * Loads the setup file (DESIGN 2), the one entry point for it: YAML with positions
 * (`setup-yaml.ts`) → JSON Schema checks (`setup-schema-check.ts`) and cross-checks
 * (`setup-cross-checks.ts`) → defaults and deep freeze (`build-setup.ts`). Every problem is
 * collected, with the path of the offending key and its line in the file, and thrown at once as a
 * `SetupError`, so `vigil validate` (the seed's "setup editor" check) can print them all.
 *
 * fkm keyword patterns and `matches` rule values are RE2 regular expressions (`src/text/pattern.ts`,
 * linear time), compiled without flags (so `pattern: "ERROR"` finds the substring ERROR,
 * case-sensitively).
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { buildSetup } from "./build-setup.js";
import { type LinkSecretFiles, readLinkSecrets } from "./link-secret.js";
import type { DeploymentSetup, Setup } from "./setup.js";
import { crossCheckIssues, sectionIssues } from "./setup-cross-checks.js";
import { SetupError, tidyIssues } from "./setup-issues.js";
import { checkSetupSchema } from "./setup-schema-check.js";
import { readSetupYaml } from "./setup-yaml.js";

export { formatSetupIssues, SetupError, type SetupIssue } from "./setup-issues.js";

/** How a process loads the setup. */
export interface SetupLoadOptions {
  /** Whose `linkSecretFile`s are read (default "all"; see `LinkSecretFiles`). */
  readonly linkSecretFiles?: LinkSecretFiles;
  /**
   * true: a hub-only setup (`hub:` and maybe `limits:`, no `gateway:`) is accepted, with `gateway`
   * undefined (`vigil hub`, `vigil validate`). Default false: such a file is refused, saying it is a
   * hub-only setup (`vigil gateway`, `vigil up`, `vigil probe --config`).
   */
  readonly hubOnly?: boolean;
}

/** Options of a load that refuses a hub-only setup, so the result has its `gateway` section. */
type DeploymentLoad = SetupLoadOptions & { readonly hubOnly?: false };

/**
 * Parses and validates setup YAML and returns the frozen `Setup` with every default filled in
 * (gateway port 7039, publish [memory], 256 columns per dataview, 8192-unit cells, probe hostname
 * 127.0.0.1 and ports 7136/7137, memory protection 2048 MiB at 0.9, rest-api bufferSize 1000 and
 * rowLimit 200, fkm sampleInterval 20 s, hub port 8081 with 100 000 series per entity, security
 * enabled with 300 s tokens; see `defaults.ts`). `source` (a file name) prefixes every issue path;
 * `baseDir`, when given, is the folder that relative paths in the setup (publish file,
 * certificates, keytab, link secret files) are resolved against, otherwise they are kept as written. Throws a
 * `SetupError` listing every YAML syntax error, or else every schema and cross-check problem.
 * `options.linkSecretFiles` says whose link secret files are read (default every probe's);
 * `options.hubOnly` whether a hub-only setup is accepted (default no: the result then always has
 * its `gateway`).
 */
export function parseSetup(
  yamlText: string,
  source?: string,
  baseDir?: string,
  options?: DeploymentLoad,
): DeploymentSetup;
export function parseSetup(
  yamlText: string,
  source: string | undefined,
  baseDir: string | undefined,
  options: SetupLoadOptions,
): Setup;
export function parseSetup(
  yamlText: string,
  source?: string,
  baseDir?: string,
  options: SetupLoadOptions = {},
): Setup {
  const hubOnly = options.hubOnly === true;
  const { data, locate } = readSetupYaml(yamlText, source);
  if (data === null || data === undefined) {
    const start = hubOnly
      ? "`gateway: { name: GW1 }`, or `hub: {}` for a hub-only setup"
      : "`gateway: { name: GW1 }`";
    throw new SetupError([locate({ segments: [], message: `the setup is empty; write at least ${start}` })]);
  }

  // Link secrets are read (linkSecretFile) and checked here: no check quotes a secret.
  const { secrets, issues } = readLinkSecrets(data, baseDir, options.linkSecretFiles);
  const schema = checkSetupSchema(data);
  const raw = [...schema.issues, ...sectionIssues(data, hubOnly), ...crossCheckIssues(data), ...issues];
  if (raw.length > 0 || !("input" in schema)) throw new SetupError(tidyIssues(raw.map(locate)));

  // Without `hubOnly`, `sectionIssues` has made sure the setup has a `gateway` (what the first
  // overload promises).
  return buildSetup(schema.input, baseDir, secrets);
}

/**
 * Reads a setup file and parses it with `parseSetup`: issue paths start with `path` as given
 * (`setup.yaml:probes[0].name`), and relative paths inside the file are resolved against the file's
 * folder. A file that cannot be read is a `SetupError` too, with the read error as `cause`. A
 * hub-only setup is refused unless `options.hubOnly`.
 */
export function loadSetupFile(path: string, options?: DeploymentLoad): DeploymentSetup;
export function loadSetupFile(path: string, options: SetupLoadOptions): Setup;
export function loadSetupFile(path: string, options: SetupLoadOptions = {}): Setup {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new SetupError([{ path, message: `cannot read the setup file (${reason}); check the path` }], {
      cause,
    });
  }
  return parseSetup(text, path, dirname(resolve(path)), options);
}
