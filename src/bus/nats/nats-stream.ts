/**
 * The JetStream stream both sides of the NATS bus use (DESIGN 4.3 "Topics", 5.5 "Bus"): one stream
 * capturing `<subjectPrefix>.entities|metrics|events`, created when missing (by the gateway's sink,
 * and by a hub's consumer so the start order does not matter), file storage, a duplicate window so
 * that a batch sent again with the same `Nats-Msg-Id`s is stored once.
 *
 * The defaults below are module-local until they move to `src/config/defaults.ts`.
 */
import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { Logger } from "pino";
import {
  DEFAULT_NATS_STREAM,
  DEFAULT_NATS_SUBJECT_PREFIX,
  NATS_DUPLICATE_WINDOW_MS,
  NATS_STREAM_MAX_AGE_MS,
} from "../../config/defaults.js";
import { nearest } from "../../config/setup-issues.js";
import type { Topic } from "../../messages/types.js";

/** The three topics of DESIGN 4.3, in a fixed order. */
export const TOPICS: readonly Topic[] = ["entities", "metrics", "events"];

const TOKEN = /^[A-Za-z0-9_-]+$/;
const STREAM_NAME = /^[A-Za-z0-9_-]{1,255}$/;

/**
 * Checks the names the setup gives (the setup schema checks the same patterns; this is the guard
 * for callers that build options by hand). Throws an Error naming the bad value and the fix.
 */
export function checkNatsNames(url: string, stream: string, subjectPrefix: string): void {
  if (!/^(nats|tls):\/\/\S+$/.test(url)) {
    throw new Error(
      `NATS url '${displayUrl(url)}' is not supported: use nats://HOST:PORT or tls://HOST:PORT`,
    );
  }
  if (!STREAM_NAME.test(stream)) {
    throw new Error(`JetStream stream name '${stream}' is invalid: use letters, digits, _ and -`);
  }
  if (!subjectPrefix.split(".").every((token) => TOKEN.test(token))) {
    throw new Error(
      `NATS subject prefix '${subjectPrefix}' is invalid: use dot-separated tokens of letters, digits, _ and -`,
    );
  }
}

/** A `--bus` URL taken apart (DESIGN 1 `vigil hub`): the server, and the names its query gives. */
export interface NatsBusUrl {
  /** The server URL as written, without the query: credentials and everything else kept. */
  readonly url: string;
  /** `stream=NAME`, when the URL names one. */
  readonly stream?: string;
  /** `subjectPrefix=PREFIX`, when the URL names one. */
  readonly subjectPrefix?: string;
}

/** The query parameters a `--bus` URL may have. */
const BUS_URL_PARAMETERS: readonly string[] = ["stream", "subjectPrefix"];

/**
 * Takes a `--bus` URL apart: `nats://[USER:PASSWORD@]HOST:PORT[?stream=NAME&subjectPrefix=PREFIX]`.
 * The query (everything after the first `?`, percent-decoded) may name the stream and the subject
 * prefix, each at most once; what it leaves out is undefined, for the caller's default. The rest of
 * the URL is kept as written. Throws an Error that names the problem and the fix for another
 * parameter (with the nearest known name when it is a near miss), one given twice, or a name
 * `checkNatsNames` refuses; the URL in a message has its credentials masked.
 */
export function parseNatsBusUrl(text: string): NatsBusUrl {
  const at = text.indexOf("?");
  const url = at < 0 ? text : text.slice(0, at);
  const shown = displayUrl(url);
  const given = new Map<string, string>();
  for (const [key, value] of new URLSearchParams(at < 0 ? "" : text.slice(at + 1))) {
    if (!BUS_URL_PARAMETERS.includes(key)) {
      const near = nearest(key, BUS_URL_PARAMETERS);
      throw new Error(
        `the --bus URL ${shown} has an unknown parameter '${key}'` +
          (near === undefined ? "" : ` (did you mean '${near}'?)`) +
          `: it takes stream=NAME and subjectPrefix=PREFIX only`,
      );
    }
    if (given.has(key)) throw new Error(`the --bus URL ${shown} gives '${key}' twice; give it once`);
    given.set(key, value);
  }
  const stream = given.get("stream");
  const subjectPrefix = given.get("subjectPrefix");
  try {
    checkNatsNames(url, stream ?? DEFAULT_NATS_STREAM, subjectPrefix ?? DEFAULT_NATS_SUBJECT_PREFIX);
  } catch (error) {
    throw new Error(`the --bus URL ${shown}: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  return {
    url,
    ...(stream === undefined ? {} : { stream }),
    ...(subjectPrefix === undefined ? {} : { subjectPrefix }),
  };
}

/**
 * The URL as logs and status pages show it: a user name or password in it is replaced by `***`
 * (the URL may carry credentials; logs must not).
 */
export function displayUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/)[^@/]*@/i, "$1***@");
}

/** The subject a topic is published on: `<subjectPrefix>.<topic>` (DESIGN 4.3). */
export function subjectOf(subjectPrefix: string, topic: Topic): string {
  return `${subjectPrefix}.${topic}`;
}

/** The three subjects of a prefix, in the order of {@link TOPICS}. */
export function subjectsOf(subjectPrefix: string): string[] {
  return TOPICS.map((topic) => subjectOf(subjectPrefix, topic));
}

/**
 * Whether a stream subject (possibly with the `*` and `>` wildcards) captures a literal subject,
 * following NATS subject matching: `*` is one token, `>` one or more trailing tokens.
 */
export function subjectCaptures(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i += 1) {
    const token = p[i];
    if (token === ">") return s.length > i;
    if (i >= s.length) return false;
    if (token !== "*" && token !== s[i]) return false;
  }
  return p.length === s.length;
}

/** Whether an error from the JetStream API is "stream not found". */
export function isStreamNotFound(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound;
}

/** Whether an error from the JetStream API is "consumer not found". */
export function isConsumerNotFound(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound;
}

export interface EnsureStreamOptions {
  readonly stream: string;
  readonly subjectPrefix: string;
  /** Duplicate window of a stream created here; default 2 min. */
  readonly duplicateWindowMs?: number;
  /** Maximum age of a stream created here; default 7 days. */
  readonly maxAgeMs?: number;
}

/**
 * Makes sure the stream exists and captures the three subjects, and returns its info. A missing
 * stream is created (file storage, limits retention with a maximum age, a duplicate window of
 * 2 min by default). An existing stream is used as it is when its subjects capture ours (it may
 * capture more, e.g. `vigil.>`); when it does not, this throws an Error that names the stream, its
 * subjects and the missing ones: vigil never changes a stream an operator set up differently.
 */
export async function ensureStream(
  jsm: JetStreamManager,
  options: EnsureStreamOptions,
  logger: Logger,
): Promise<StreamInfo> {
  const wanted = subjectsOf(options.subjectPrefix);
  let info: StreamInfo;
  try {
    info = await jsm.streams.info(options.stream);
  } catch (error) {
    if (!isStreamNotFound(error)) throw error;
    try {
      info = await jsm.streams.add({
        name: options.stream,
        subjects: wanted,
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        max_age: nanos(options.maxAgeMs ?? NATS_STREAM_MAX_AGE_MS),
        duplicate_window: nanos(options.duplicateWindowMs ?? NATS_DUPLICATE_WINDOW_MS),
      });
      logger.info({ stream: options.stream, subjects: wanted }, "created the JetStream stream");
    } catch (addError) {
      // Another gateway or hub may have created it meanwhile (with another configuration): use it.
      try {
        info = await jsm.streams.info(options.stream);
      } catch {
        throw addError;
      }
    }
  }
  const have = info.config.subjects ?? [];
  const missing = wanted.filter((subject) => !have.some((pattern) => subjectCaptures(pattern, subject)));
  if (missing.length > 0) {
    throw new Error(
      `JetStream stream '${options.stream}' exists with subjects [${have.join(", ")}] and does not capture ` +
        `[${missing.join(", ")}]: add these subjects to the stream, or set another stream name or subjectPrefix`,
    );
  }
  return info;
}
