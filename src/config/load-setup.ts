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
import { buildSetup, type SetupInput } from "./build-setup.js";
import { type LinkSecretFiles, readLinkSecrets } from "./link-secret.js";
import type { Setup } from "./setup.js";
import { crossCheckIssues } from "./setup-cross-checks.js";
import { SetupError, tidyIssues } from "./setup-issues.js";
import { schemaIssues } from "./setup-schema-check.js";
import { readSetupYaml } from "./setup-yaml.js";

export { formatSetupIssues, SetupError, type SetupIssue } from "./setup-issues.js";

/** How a process loads the setup. */
export interface SetupLoadOptions {
  /** Whose `linkSecretFile`s are read (default "all"; see `LinkSecretFiles`). */
  readonly linkSecretFiles?: LinkSecretFiles;
}

/**
 * Parses and validates setup YAML and returns the frozen `Setup` with every default filled in
 * (gateway port 7039, publish [memory], 256 columns per dataview, 8192-unit cells, probe hostname
 * 127.0.0.1 and ports 7136/7137, memory protection 2048 MiB at 0.9, rest-api bufferSize 1000 and
 * rowLimit 200, fkm sampleInterval 20 s, hub port 8081 with 100 000 series per entity, security
 * enabled with 300 s tokens; see `defaults.ts`). `source` (a file name) prefixes every issue path;
 * `baseDir`, when given, is the folder that relative paths in the setup (publish file,
 * certificates, keytab, link secret files) are resolved against, otherwise they are kept as written. Throws a
 * `SetupError` listing every YAML syntax error, or else every schema and cross-check problem.
 * `options.linkSecretFiles` says whose link secret files are read (default every probe's).
 */
export function parseSetup(
  yamlText: string,
  source?: string,
  baseDir?: string,
  options: SetupLoadOptions = {},
): Setup {
  const { data, locate } = readSetupYaml(yamlText, source);
  if (data === null || data === undefined) {
    throw new SetupError([
      locate({ segments: [], message: "the setup is empty; write at least `gateway: { name: GW1 }`" }),
    ]);
  }

  // Link secrets are read (linkSecretFile) and checked here: no check quotes a secret.
  const { secrets, issues } = readLinkSecrets(data, baseDir, options.linkSecretFiles);
  const raw = [...schemaIssues(data), ...crossCheckIssues(data), ...issues];
  if (raw.length > 0) throw new SetupError(tidyIssues(raw.map(locate)));

  // The schema and the cross-checks have passed, so `data` has the shape of SetupInput.
  return buildSetup(data as SetupInput, baseDir, secrets);
}

/**
 * Reads a setup file and parses it with `parseSetup`: issue paths start with `path` as given
 * (`setup.yaml:probes[0].name`), and relative paths inside the file are resolved against the file's
 * folder. A file that cannot be read is a `SetupError` too, with the read error as `cause`.
 */
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
