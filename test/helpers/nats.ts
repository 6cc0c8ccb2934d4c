/**
 * Test helpers for the NATS JetStream bus (DESIGN 5.5): tests talk to the real nats-server on
 * 127.0.0.1:4222 (scripts/services.sh starts it; CI does too), each with its own stream, subject
 * prefix and durable name, deleted in `after()`. A file skips with {@link NATS_SKIP} when the server
 * is not reachable.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type JetStreamManager, jetstream, jetstreamManager, type StoredMsg } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type Logger, pino } from "pino";
import { type Envelope, MessageIdSource } from "../../src/bus/envelope.js";
import type { MessageOf, PublicV2Message } from "../../src/messages/types.js";
import { TOPIC_OF } from "../../src/messages/types.js";
import { freePort } from "./free-port.js";

export const NATS_URL = "nats://127.0.0.1:4222";
/** The reason a NATS test file skips. */
export const NATS_SKIP = "NATS JetStream not reachable on 127.0.0.1:4222: run scripts/services.sh start";

/** Whether a NATS server with JetStream answers on {@link NATS_URL} (within 2 s). */
export async function natsReachable(): Promise<boolean> {
  let nc: NatsConnection | undefined;
  try {
    nc = await connect({ servers: NATS_URL, timeout: 2_000, reconnect: false });
    await jetstreamManager(nc, { timeout: 2_000 });
    return true;
  } catch {
    return false;
  } finally {
    await nc?.close().catch(() => undefined);
  }
}

/** Names no other test (or earlier run) uses: stream, subject prefix and durable consumer. */
export function uniqueNames(label: string): { stream: string; subjectPrefix: string; durable: string } {
  const suffix = randomBytes(6).toString("hex");
  return {
    stream: `TEST_${label.toUpperCase()}_${suffix}`,
    subjectPrefix: `test.${label}.${suffix}`,
    durable: `hub-${suffix}`,
  };
}

/** A TCP port nothing listens on (bound then released), for "NATS is down" cases. */
export const closedPort = freePort;

/**
 * Polls `check` every 20 ms until it returns a value other than undefined/false, and fails with
 * `what` after `timeoutMs` (default 15 s): waiting on a condition, never a fixed sleep.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** One pino log line as an object. */
export type LogRecord = { level: number; msg: string } & Record<string, unknown>;

/** A pino logger that keeps its lines in `lines` (level info and above). */
export function captureLogger(): { logger: Logger; lines: LogRecord[] } {
  const lines: LogRecord[] = [];
  const logger = pino(
    { level: "info" },
    {
      write(line: string): void {
        lines.push(JSON.parse(line) as LogRecord);
      },
    },
  );
  return { logger, lines };
}

/** A table message for row `row`, valid public-v2. */
export function tableMessage(row: string, value = "1"): MessageOf<"table"> {
  return {
    type: "table",
    operation: "update",
    data: {
      sampleTime: "2024-05-01T12:00:00.000Z",
      target: {
        gateway: "GW1",
        probe: "probe1",
        managedEntity: "web-01",
        type: "",
        sampler: "orders",
        dataview: "queue",
        row,
        filter: { osType: "Linux", pluginName: "rest-api" },
      },
      row: { name: row, queued: value },
    },
  };
}

/** One message of each topic: a probe (entities), a table row (metrics), a severity (events). */
export function oneOfEachTopic(): PublicV2Message[] {
  return [
    {
      type: "probe",
      operation: "create",
      data: {
        timestamp: "2024-05-01T12:00:00.000Z",
        target: { gateway: "GW1", probe: "probe1" },
        parameters: { osType: "Linux" },
      },
    },
    tableMessage("eu-1"),
    {
      type: "severity",
      operation: "update",
      data: {
        timestamp: "2024-05-01T12:00:00.000Z",
        target: { gateway: "GW1", probe: "probe1", managedEntity: "web-01" },
        data: { severity: "OK", active: true, snoozed: false, snoozedParents: 0, userAssigned: false },
      },
    },
  ];
}

/** `count` table-row envelopes with fresh ids of one gateway run. */
export function tableEnvelopes(count: number, ids = new MessageIdSource("GW1")): Envelope[] {
  return ids.wrap(Array.from({ length: count }, (_, i) => tableMessage(`row-${i}`, String(i))));
}

/** The subject an envelope goes to under `subjectPrefix`. */
export function subjectFor(subjectPrefix: string, message: PublicV2Message): string {
  return `${subjectPrefix}.${TOPIC_OF[message.type]}`;
}

/**
 * An admin connection for a test file: reads streams back, publishes raw bytes, and deletes every
 * stream it was told about in {@link NatsAdmin.cleanup} (call it from `after()`).
 */
export class NatsAdmin {
  private readonly streams = new Set<string>();

  private constructor(
    readonly nc: NatsConnection,
    readonly jsm: JetStreamManager,
  ) {}

  static async open(): Promise<NatsAdmin> {
    const nc = await connect({ servers: NATS_URL, timeout: 5_000 });
    return new NatsAdmin(nc, await jetstreamManager(nc, { timeout: 5_000 }));
  }

  /** Registers a stream for deletion at cleanup (whether or not it exists yet). */
  track(stream: string): string {
    this.streams.add(stream);
    return stream;
  }

  /** Whether the stream exists. */
  async exists(stream: string): Promise<boolean> {
    try {
      await this.jsm.streams.info(stream);
      return true;
    } catch {
      return false;
    }
  }

  /** Every message stored in the stream, in sequence order. */
  async read(stream: string): Promise<StoredMsg[]> {
    const info = await this.jsm.streams.info(stream);
    const out: StoredMsg[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq += 1) {
      const msg = await this.jsm.streams.getMessage(stream, { seq });
      if (msg !== null) out.push(msg);
    }
    return out;
  }

  /** Publishes raw bytes to JetStream, with a `Nats-Msg-Id` when `id` is given; resolves on the ack. */
  async publishRaw(subject: string, data: string, id?: string): Promise<void> {
    const js = jetstream(this.nc, { timeout: 5_000 });
    await js.publish(subject, data, id === undefined ? {} : { msgID: id });
  }

  /** The durable consumer's unacknowledged and undelivered counts; undefined while it does not exist. */
  async consumerCounts(
    stream: string,
    durable: string,
  ): Promise<{ ackPending: number; pending: number } | undefined> {
    try {
      const info = await this.jsm.consumers.info(stream, durable);
      return { ackPending: info.num_ack_pending, pending: info.num_pending };
    } catch {
      return undefined;
    }
  }

  /** Whether the durable consumer has nothing left: every message delivered and acknowledged. */
  async consumerDone(stream: string, durable: string): Promise<boolean> {
    const counts = await this.consumerCounts(stream, durable);
    return counts !== undefined && counts.ackPending === 0 && counts.pending === 0;
  }

  /** Deletes the tracked streams (their consumers go with them) and closes the connection. */
  async cleanup(): Promise<void> {
    for (const stream of this.streams) {
      await this.jsm.streams.delete(stream).catch(() => undefined);
    }
    await this.nc.close();
  }
}

/** Where scripts/services.sh installs nats-server. */
const NATS_SERVER_BIN = "/usr/sbin/nats-server";

/**
 * A nats-server of the test's own (a free port, a temporary store directory) that the test may
 * stop and start again, to show NATS restarts are ridden out without touching the shared server.
 * {@link PrivateNats.start} resolves undefined when the nats-server binary is not installed.
 */
export class PrivateNats {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<PrivateNats | undefined> {
    if (!existsSync(NATS_SERVER_BIN)) return undefined;
    const server = new PrivateNats(await closedPort(), mkdtempSync(join(tmpdir(), "vigil-nats-")));
    await server.up();
    return server;
  }

  /** Starts the server (again, on the same port and store) and resolves once it accepts clients. */
  async up(): Promise<void> {
    if (this.child !== undefined) return;
    const child = spawn(
      NATS_SERVER_BIN,
      ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", this.dir],
      {
        stdio: "ignore",
      },
    );
    this.child = child;
    await waitFor(`nats-server on port ${this.port}`, async () => {
      if (child.exitCode !== null) throw new Error(`nats-server exited with ${child.exitCode}`);
      try {
        const nc = await connect({ servers: this.url, timeout: 1_000, reconnect: false });
        await nc.close();
        return true;
      } catch {
        return false;
      }
    });
  }

  /** Stops the server (SIGTERM to the process this helper started) and waits for it to exit. */
  async down(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }

  /** Stops the server and removes its store. */
  async cleanup(): Promise<void> {
    await this.down();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
