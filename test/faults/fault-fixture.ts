/**
 * What the fault tests share: a setup file for probe + gateway + hub as processes, a
 * client that keeps pushing numbered values into a probe and remembers which ones were
 * acknowledged, numbered backfill batches for `POST /v0/messages`, and a reader of what the hub
 * stored. Every pushed value is distinct, so "stored once" is checked value by value.
 */
import assert from "node:assert/strict";
import type { MessageOf } from "../../src/messages/types.js";
import { writeSecretFile } from "../helpers/vigil-process.js";
import { P1_SECRET } from "../link/helpers.js";

/** Probe p1's link secret in {@link faultSetup}; `vigil probe` gets it with `--link-secret-file`. */
export const FAULT_P1_SECRET = P1_SECRET;

/** `vigil probe` linked to `gatewayUrl` as p1, its secret in a file (mode 0600) in `dir`. */
export function probeArgs(dir: string, gatewayUrl: string): string[] {
  return [
    "probe",
    "--gateway",
    gatewayUrl,
    "--name",
    "p1",
    "--link-secret-file",
    writeSecretFile(dir, "p1.secret", FAULT_P1_SECRET),
  ];
}

/** The managed entity, sampler, dataview and row the probe pushes go to. */
export const PUSH = { entity: "me1", sampler: "s", dataview: "dv", row: "r", column: "v" } as const;
/** The managed entity backfilled messages are about (no probe pushes to it). */
export const BACKFILL_ENTITY = "bf";

/**
 * A setup file for one gateway (on `gatewayPort`, 0 for any) publishing to the targets in
 * `publish` (YAML flow items such as `{ nats: { url: …, stream: S, subjectPrefix: p } }`), one
 * probe `p1` (link secret {@link FAULT_P1_SECRET}) on any port with entity {@link PUSH}.entity, and a hub with security off.
 */
export function faultSetup(options: { gatewayPort: number; publish: readonly string[] }): string {
  return `gateway:
  name: GWF
  port: ${options.gatewayPort}
  publish:
${options.publish.map((p) => `    - ${p}\n`).join("")}probes:
  - name: p1
    restApiHttpPort: 0
    linkSecret: ${FAULT_P1_SECRET}
    managedEntities:
      - name: ${PUSH.entity}
        samplers:
          - { name: ${PUSH.sampler}, plugin: rest-api }
hub:
  port: 0
  security: { enabled: false }
`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Seconds to wait after a 503, from its `Retry-After` (1 s when absent; at most 2 s here). */
function retryAfterMs(response: Response): number {
  const seconds = Number(response.headers.get("retry-after") ?? "1");
  return Math.min(Number.isFinite(seconds) && seconds > 0 ? seconds : 1, 2) * 1_000;
}

/**
 * Pushes values 1, 2, 3, … into {@link PUSH}'s row of dataview `dataview` on a probe, one row PUT
 * each, one after the other, as a data source does. A value counts as acknowledged only on a 200;
 * a 503 is retried after its `Retry-After`, a refused connection (the probe is down) after a short
 * pause, with the same value; a 404 (a restarted probe, whose memory is empty) creates the dataview
 * again with the value. `probeUrl` is read before every request, so a restarted probe can be
 * pointed at.
 */
export class Pusher {
  /** Values the probe answered 200 for, in order. */
  readonly acknowledged: number[] = [];
  /** Status codes other than 200 seen, with how often. */
  readonly refusals = new Map<number | string, number>();
  private next = 1;
  private running = false;
  private loop: Promise<void> = Promise.resolve();

  constructor(
    public probeUrl: string,
    readonly dataview: string = PUSH.dataview,
  ) {}

  private get dataviewUrl(): string {
    return `${this.probeUrl}/v1/managedEntity/${PUSH.entity}/sampler/${PUSH.sampler}/dataview/${this.dataview}`;
  }

  /** Creates the dataview (its row holds value 0, not counted) and starts pushing. */
  async start(): Promise<void> {
    const response = await fetch(this.dataviewUrl, {
      method: "PUT",
      body: JSON.stringify([{ name: PUSH.row, [PUSH.column]: 0 }]),
    });
    assert.equal(response.status, 200, await response.text());
    this.running = true;
    this.loop = this.run();
  }

  /** Stops pushing; resolves once the request in flight has its answer. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** Waits until `count` more values are acknowledged than now. */
  async advance(count: number, timeoutMs = 60_000): Promise<void> {
    const target = this.acknowledged.length + count;
    const deadline = Date.now() + timeoutMs;
    while (this.acknowledged.length < target) {
      if (Date.now() > deadline) {
        throw new Error(
          `the probe acknowledged ${this.acknowledged.length} of ${target} values within ${timeoutMs} ms; refusals: ${JSON.stringify([...this.refusals])}`,
        );
      }
      await sleep(20);
    }
  }

  private note(what: number | string): void {
    this.refusals.set(what, (this.refusals.get(what) ?? 0) + 1);
  }

  private async run(): Promise<void> {
    while (this.running) {
      const value = this.next;
      try {
        let response = await fetch(`${this.dataviewUrl}/row/${PUSH.row}`, {
          method: "PUT",
          body: JSON.stringify({ name: PUSH.row, [PUSH.column]: value }),
          signal: AbortSignal.timeout(10_000),
        });
        await response.arrayBuffer();
        if (response.status === 404) {
          this.note(404);
          response = await fetch(this.dataviewUrl, {
            method: "PUT",
            body: JSON.stringify([{ name: PUSH.row, [PUSH.column]: value }]),
            signal: AbortSignal.timeout(10_000),
          });
          await response.arrayBuffer();
        }
        if (response.status === 200) {
          this.acknowledged.push(value);
          this.next += 1;
        } else {
          this.note(response.status);
          await sleep(response.status === 503 ? retryAfterMs(response) : 200);
        }
      } catch (error) {
        // The probe is down or restarting: the same value again, once it answers.
        this.note((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name);
        await sleep(100);
      }
    }
  }
}

const T0 = Date.parse("2026-02-01T00:00:00.000Z");

/** Table message number `n` about {@link BACKFILL_ENTITY}: value `n`, sampleTime T0 + n ms. */
export function backfillMessage(n: number): MessageOf<"table"> {
  return {
    type: "table",
    operation: "update",
    data: {
      sampleTime: new Date(T0 + n).toISOString(),
      target: {
        gateway: "GWF",
        probe: "p1",
        managedEntity: BACKFILL_ENTITY,
        type: "",
        sampler: PUSH.sampler,
        dataview: PUSH.dataview,
        row: PUSH.row,
        filter: { osType: "Linux", pluginName: "rest-api" },
      },
      row: { name: PUSH.row, [PUSH.column]: String(n) },
    },
  };
}

/**
 * Posts backfill batch number `batch` (messages batch·size+1 … (batch+1)·size) as NDJSON;
 * resolves with the status and the body (parsed when JSON), or the network error's code.
 */
export async function postBackfill(
  hubUrl: string,
  batch: number,
  size: number,
): Promise<{ status: number | string; body: unknown; retryAfter: string | null }> {
  const lines: string[] = [];
  for (let i = 1; i <= size; i += 1) lines.push(JSON.stringify(backfillMessage(batch * size + i)));
  try {
    const response = await fetch(`${hubUrl}/v0/messages`, {
      method: "POST",
      headers: { "content-type": "application/x-ndjson" },
      body: `${lines.join("\n")}\n`,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    return { status: response.status, body, retryAfter: response.headers.get("retry-after") };
  } catch (error) {
    return {
      status: (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name,
      body: undefined,
      retryAfter: null,
    };
  }
}

/**
 * Posts backfill batches one after another beside the test, each again (after `retryMs`) until the
 * hub answers 200, until stopped: `values` holds every value of a batch answered 200, `statuses`
 * every answer. `hubUrl` is asked before every request (a restarted hub may listen elsewhere).
 */
export class Backfiller {
  readonly values: number[] = [];
  readonly statuses: (number | string)[] = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(hubUrl: () => string, size: number, retryMs: number) {
    this.done = this.loop(hubUrl, size, retryMs);
  }

  /** Stops after the request in flight; resolves when the loop has ended. */
  stop(): Promise<void> {
    this.running = false;
    return this.done;
  }

  private async loop(hubUrl: () => string, size: number, retryMs: number): Promise<void> {
    for (let batch = 0; this.running; ) {
      const answer = await postBackfill(hubUrl(), batch, size);
      this.statuses.push(answer.status);
      if (answer.status === 200) {
        this.values.push(...backfillValues(batch, size));
        batch += 1;
      } else {
        // The hub is down (refused), restarting or its store is away: the same batch again.
        await new Promise((resolve) => setTimeout(resolve, retryMs));
      }
    }
  }
}

/** The values a batch of {@link postBackfill} holds. */
export function backfillValues(batch: number, size: number): number[] {
  return Array.from({ length: size }, (_, i) => batch * size + i + 1);
}

/**
 * Every value the hub holds for cell `<sampler>/<dataview>/<row>/<column>` of managed entity
 * `entity` (through `GET /v0/entities/{id}/metrics/data`, paged), as numbers; [] while the entity
 * or the cell is unknown. Throws on any other answer but 200.
 */
export async function storedValues(
  hubUrl: string,
  entity: string,
  dataview: string = PUSH.dataview,
): Promise<number[]> {
  const filter = encodeURIComponent(`svc.name = "${entity}"`);
  const listed = await fetch(`${hubUrl}/v0/entities?filter=${filter}`);
  assert.equal(listed.status, 200, await listed.clone().text());
  const entities = (await listed.json()) as { id: number }[];
  const id = entities[0]?.id;
  if (id === undefined) return [];
  const path = encodeURIComponent(`${PUSH.sampler}/${dataview}/${PUSH.row}/${PUSH.column}`);
  const out: number[] = [];
  for (let skip = 0; ; skip += 10_000) {
    const response = await fetch(
      `${hubUrl}/v0/entities/${id}/metrics/data?path=${path}&skip=${skip}&limit=10000`,
    );
    const text = await response.text();
    assert.equal(response.status, 200, text);
    const page = JSON.parse(text) as { totalCount: number; values: { value: string }[] };
    for (const v of page.values) out.push(Number(v.value));
    if (page.values.length === 0 || out.length >= page.totalCount) return out;
  }
}

/** Values stored more than once, in order. */
export function duplicatesIn(values: readonly number[]): number[] {
  const seen = new Set<number>();
  const twice = new Set<number>();
  for (const v of values) {
    if (seen.has(v)) twice.add(v);
    seen.add(v);
  }
  return [...twice].sort((a, b) => a - b);
}

/** Values of `expected` missing from `values`, in order (at most 20, for a readable message). */
export function missingFrom(values: readonly number[], expected: readonly number[]): number[] {
  const have = new Set(values);
  return expected.filter((v) => !have.has(v)).slice(0, 20);
}

/** A promise that rejects after `ms` with `what`, raced against `promise`. */
export async function within<T>(what: string, ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
