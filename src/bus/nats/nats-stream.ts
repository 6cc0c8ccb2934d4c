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
import { NATS_DUPLICATE_WINDOW_MS, NATS_STREAM_MAX_AGE_MS } from "../../config/defaults.js";
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
    throw new Error(`NATS url '${url}' is not supported: use nats://HOST:PORT or tls://HOST:PORT`);
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
