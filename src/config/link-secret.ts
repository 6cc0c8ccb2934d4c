/**
 * Link secrets (DESIGN 5.4b): the shared secret a probe presents on the probe link's upgrade
 * (`Authorization: Bearer <secret>`). A probe's secret is given in the setup (`linkSecret`, or
 * `linkSecretFile`, a file read at load) for the gateway, and to `vigil probe` by
 * `--link-secret-file FILE` or the `VIGIL_LINK_SECRET` environment variable.
 *
 * A secret is held in a {@link LinkSecret}, whose text never shows in JSON, `util.inspect` or a
 * log line; the gateway keeps only its SHA-256 digest to look the presenting probe up. A secret
 * is at least LINK_SECRET_MIN_LENGTH characters of printable ASCII without spaces (it travels in an
 * HTTP header); a file holding one must be readable by its owner only (mode 0600), like every
 * file holding a secret (docs/security.md).
 */
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { inspect } from "node:util";
import { LINK_SECRET_MIN_LENGTH } from "./defaults.js";
import { formatPath, isRecord, type RawIssue } from "./setup-issues.js";

/** The environment variable `vigil probe` reads its link secret from. */
export const LINK_SECRET_ENV = "VIGIL_LINK_SECRET";

/** Printable ASCII without the space: what an HTTP header carries unchanged. */
const SECRET_TEXT = /^[\x21-\x7e]+$/;
const HIDDEN = "[link secret]";

/**
 * A probe's link secret: `reveal()` gives its text; JSON and `inspect` show `[link secret]`. Its
 * digest is an own property, so two setups whose secrets differ are not deep-equal (a reload that
 * changes only a secret is applied).
 */
export class LinkSecret {
  readonly #text: string;
  /** SHA-256 of the text, hex: what the gateway looks a presented secret up by. */
  readonly digest: string;

  constructor(text: string) {
    this.#text = text;
    this.digest = linkSecretDigest(text);
    Object.freeze(this);
  }

  reveal(): string {
    return this.#text;
  }

  toJSON(): string {
    return HIDDEN;
  }

  toString(): string {
    return HIDDEN;
  }

  [inspect.custom](): string {
    return HIDDEN;
  }
}

/**
 * SHA-256 of a presented secret, hex. Looking a digest up in a Map tells an attacker nothing about
 * the secrets (a timing difference reveals at most a digest's prefix, not a secret's).
 */
export function linkSecretDigest(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Why `text` cannot be a link secret, or undefined when it can (the text is never quoted). */
export function linkSecretProblem(text: string): string | undefined {
  if (text.length < LINK_SECRET_MIN_LENGTH) {
    return `a link secret needs at least ${LINK_SECRET_MIN_LENGTH} characters; this one has ${text.length}`;
  }
  if (!SECRET_TEXT.test(text)) {
    return "a link secret is printable ASCII without spaces (it travels in an HTTP header)";
  }
  return undefined;
}

/**
 * Reads a secret file: its text without the line ending(s) at its end. Throws an Error naming the
 * fix when the file cannot be read, is readable or writable by group or others, or holds no valid
 * secret; the message never holds the file's content.
 */
export function readLinkSecretFile(path: string): LinkSecret {
  let text: string;
  try {
    const mode = statSync(path).mode;
    if (process.platform !== "win32" && (mode & 0o077) !== 0) {
      throw new Error(
        `${path} is mode 0${(mode & 0o777).toString(8)}, open to other users; run chmod 600 on it`,
      );
    }
    text = readFileSync(path, "utf8").replace(/[\r\n]+$/, "");
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`cannot read the link secret file: ${reason}`, { cause: error });
  }
  const problem = linkSecretProblem(text);
  if (problem !== undefined) throw new Error(`${path}: ${problem}`);
  return new LinkSecret(text);
}

/**
 * The link secret `vigil probe` presents: the file's when `file` is given, else the
 * VIGIL_LINK_SECRET environment variable's, else `fallback` (the probe's own `linkSecret` in a
 * setup read with `--config`), else none. Throws an Error naming the fix for an unusable one.
 */
export function probeLinkSecret(file: string | undefined, fallback?: LinkSecret): LinkSecret | undefined {
  if (file !== undefined) return readLinkSecretFile(file);
  const fromEnvironment = process.env[LINK_SECRET_ENV];
  if (fromEnvironment !== undefined && fromEnvironment !== "") {
    const problem = linkSecretProblem(fromEnvironment);
    if (problem !== undefined) throw new Error(`${LINK_SECRET_ENV}: ${problem}`);
    return new LinkSecret(fromEnvironment);
  }
  return fallback;
}

/** One probe's secret in the loaded setup. */
export interface ProbeLinkSecret {
  readonly probe: string;
  readonly secret: LinkSecret;
}

/**
 * Whose `linkSecretFile`s a process reads when it loads the setup: every probe's (the gateway,
 * `vigil up`, `vigil validate`), one probe's (`vigil probe --config`: a probe's host need not hold
 * the others' secrets), or none (`vigil hub`, which has no use for them).
 */
export type LinkSecretFiles = "all" | "none" | { readonly probe: string };

/**
 * The link secrets of the setup's probes (`data`: the YAML as read, schema already passed): each
 * inline `linkSecret`, and each `linkSecretFile` that `files` selects (default all) read, relative
 * to `baseDir` when given; with an issue for each secret that is too short, unreadable, or shared
 * with another probe (two probes may not share one: a secret names its probe). No issue quotes a
 * secret.
 */
export function readLinkSecrets(
  data: unknown,
  baseDir: string | undefined,
  files: LinkSecretFiles = "all",
): { secrets: ProbeLinkSecret[]; issues: RawIssue[] } {
  const secrets: ProbeLinkSecret[] = [];
  const issues: RawIssue[] = [];
  const firstByDigest = new Map<string, string>();
  const probes = isRecord(data) && Array.isArray(data.probes) ? (data.probes as unknown[]) : [];
  probes.forEach((probe, p) => {
    if (!isRecord(probe) || typeof probe.name !== "string") return;
    let secret: LinkSecret | undefined;
    let where: (string | number)[];
    if (typeof probe.linkSecret === "string") {
      where = ["probes", p, "linkSecret"];
      const problem = linkSecretProblem(probe.linkSecret);
      if (problem !== undefined) issues.push({ segments: where, message: problem });
      else secret = new LinkSecret(probe.linkSecret);
    } else if (typeof probe.linkSecretFile === "string") {
      if (files === "none" || (typeof files === "object" && files.probe !== probe.name)) return;
      where = ["probes", p, "linkSecretFile"];
      const file = probe.linkSecretFile;
      const path = baseDir === undefined || isAbsolute(file) ? file : resolve(baseDir, file);
      try {
        secret = readLinkSecretFile(path);
      } catch (error) {
        issues.push({ segments: where, message: (error as Error).message });
      }
    } else {
      return;
    }
    if (secret === undefined) return;
    const first = firstByDigest.get(secret.digest);
    if (first !== undefined) {
      issues.push({
        segments: where,
        message: `the same link secret as ${first}; give each probe a secret of its own`,
      });
      return;
    }
    firstByDigest.set(secret.digest, formatPath(where));
    secrets.push({ probe: probe.name, secret });
  });
  return { secrets, issues };
}
