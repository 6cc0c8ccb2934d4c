/**
 * Hub ingest on its own (DESIGN 1, 5.5), against a fake store that de-duplicates like the real ones
 * and can refuse one message's data or be down: duplicates skipped, the message at fault found by
 * halving and rejected while the rest commits, an outage thrown for the caller to retry, caches
 * changed only after a commit, blank cells no samples, events kept.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import type { Delivery } from "../../../src/bus/bus.js";
import { MessageIdSource } from "../../../src/bus/envelope.js";
import { Ingester } from "../../../src/hub/ingest/ingester.js";
import { sampleRowsOf } from "../../../src/hub/store/sample-rows.js";
import {
  type IngestBatch,
  type MessageKey,
  type SampleInput,
  type Store,
  StoreDataError,
  type StoreTransaction,
} from "../../../src/hub/store/store.js";
import type { PublicV2Message } from "../../../src/messages/types.js";

const logger = pino({ level: "silent" });

const keyText = (k: MessageKey) => (k.kind === "seq" ? `${k.origin}.${k.seq}` : `#${k.hash}`);

/** A store kept in arrays; commits are all-or-nothing like a transaction. */
class FakeStore {
  readonly claimed = new Set<string>();
  readonly committed: IngestBatch[] = [];
  transactions = 0;
  down = 0;
  poison = "POISON";

  asStore(): Store {
    return {
      kind: "fake",
      migrate: async () => [],
      ingest: async (batch) => {
        this.committed.push(batch);
      },
      listEntities: async () => [],
      listProbes: async () => [],
      getEntity: async () => undefined,
      listSeries: async () => [],
      listEvents: async () => [],
      queryMetrics: async () => [],
      queryMetricBatches: async () => [],
      latestSeverities: async () => [],
      deleteBefore: async () => ({ samples: 0, events: 0 }),
      listSamples: async () => ({ totalCount: 0, samples: [] }),
      listMetricNames: async () => [],
      listRowNames: async () => [],
      close: async () => {},
      ping: async () => {
        if (this.down > 0) throw new Error("connection refused");
      },
      transaction: async (work) => {
        this.transactions += 1;
        if (this.down > 0) {
          this.down -= 1;
          throw new Error("connection refused");
        }
        const claims = new Set<string>();
        const writes: IngestBatch[] = [];
        const tx: StoreTransaction = {
          claim: async (keys) =>
            keys.map((k) => {
              const text = keyText(k);
              if (this.claimed.has(text) || claims.has(text)) return false;
              claims.add(text);
              return true;
            }),
          write: async (batch) => {
            if (samplesOf(batch).some((x) => x.text === this.poison)) throw new StoreDataError("poison");
            writes.push(batch);
          },
        };
        const result = await work(tx);
        for (const c of claims) this.claimed.add(c);
        this.committed.push(...writes);
        return result;
      },
    } as Store;
  }

  get samples() {
    return this.committed.flatMap((b) => samplesOf(b));
  }
}

/** The samples of a batch one object each, from either form. */
function samplesOf(batch: IngestBatch): SampleInput[] {
  const { rows, cells } = sampleRowsOf(batch);
  return rows.flatMap((r) =>
    Array.from({ length: r.end - r.start }, (_, i) => ({
      entity: r.entity,
      series: {
        sampler: r.sampler,
        samplerType: r.samplerType,
        dataview: r.dataview,
        row: r.row,
        column: cells.column(r.start + i),
      },
      at: r.at,
      text: cells.text(r.start + i),
      value: Number.isNaN(cells.value(r.start + i)) ? null : cells.value(r.start + i),
    })),
  );
}

const target = (row: string) => ({
  gateway: "GW",
  probe: "p",
  managedEntity: "me",
  type: "",
  sampler: "s",
  dataview: "d",
  row,
  filter: { osType: "Linux", pluginName: "rest-api" },
});
const table = (row: string, cells: Record<string, string>): PublicV2Message => ({
  type: "table",
  operation: "update",
  data: { sampleTime: "2026-01-01T00:00:00.000Z", target: target(row), row: cells },
});

function deliveries(messages: readonly PublicV2Message[], ids = new MessageIdSource("GW")): Delivery[] {
  return ids.wrap(messages).map((e) => ({ id: e.id, message: e.message }));
}

describe("Ingester", () => {
  test("past hub.maxEntities a message adding an entity is refused with the reason; the rest is stored", async () => {
    const fake = new FakeStore();
    const ingester = new Ingester(fake.asStore(), logger, { maxEntities: 2 });
    const on = (managedEntity: string, value: string): PublicV2Message => {
      const message = table("r", { v: value });
      return {
        ...message,
        data: { ...message.data, target: { ...target("r"), managedEntity } },
      } as PublicV2Message;
    };
    const ids = new MessageIdSource("GW");
    const first = await ingester.ingest(
      deliveries([on("me0", "1"), on("me1", "2"), on("me2", "3"), on("me0", "4")], ids),
    );
    assert.equal(first.stored, 3);
    assert.equal(first.rejected.length, 1);
    assert.equal(first.rejected[0]?.index, 2);
    assert.match(first.rejected[0]?.reason ?? "", /more than 2 entities, the limit \(hub\.maxEntities\)/);
    // Known entities keep being stored; a new one is still refused, in a later batch too.
    const second = await ingester.ingest(deliveries([on("me1", "5"), on("__proto__", "6")], ids));
    assert.deepEqual([second.stored, second.rejected.map((r) => r.index)], [1, [1]]);
    assert.deepEqual(
      fake.samples.map((sample) => `${sample.entity.managedEntity}=${sample.text}`),
      ["me0=1", "me1=2", "me0=4", "me1=5"],
    );
  });

  test("a probe message writes one probe row and rewrites no entity, however many the probe has", async () => {
    const fake = new FakeStore();
    const ingester = new Ingester(fake.asStore(), logger);
    const ids = new MessageIdSource("GW");
    const on = (managedEntity: string): PublicV2Message => {
      const message = table("r", { v: "1" });
      return {
        ...message,
        data: { ...message.data, target: { ...target("r"), managedEntity } },
      } as PublicV2Message;
    };
    await ingester.ingest(deliveries([on("me0"), on("me1"), on("me2")], ids));
    const before = fake.committed.length;
    const probe = {
      type: "probe",
      operation: "update",
      data: {
        timestamp: "2026-01-01T00:00:01.000Z",
        target: { gateway: "GW", probe: "p" },
        parameters: { osType: "Linux", HostName: "h1" },
      },
    } as PublicV2Message;
    assert.equal((await ingester.ingest(deliveries([probe], ids))).stored, 1);
    const written = fake.committed.slice(before);
    assert.deepEqual(
      written.flatMap((b) => b.entities),
      [],
    );
    assert.deepEqual(
      written.flatMap((b) => b.probes ?? []),
      [
        {
          gateway: "GW",
          probe: "p",
          osType: "Linux",
          hostname: "h1",
          at: Date.parse("2026-01-01T00:00:01.000Z"),
          fallback: false,
        },
      ],
    );
    // The metrics before it offered the probe's OS type as the fallback, once.
    const fallbacks = fake.committed.slice(0, before).flatMap((b) => b.probes ?? []);
    assert.deepEqual(
      fallbacks.map((p) => [p.probe, p.osType, p.fallback]),
      [["p", "Linux", true]],
    );
  });

  test("updates and deletes tell the store their dataview: plug-in, OS type, rows updated and deleted", async () => {
    const fake = new FakeStore();
    const ingester = new Ingester(fake.asStore(), logger);
    const remove = (row: string | undefined): PublicV2Message => {
      const t = target(row ?? "");
      const { row: _row, ...headlineTarget } = t;
      return {
        type: row === undefined ? "headline" : "table",
        operation: "delete",
        data: {
          sampleTime: "2026-01-01T00:00:02.000Z",
          target: row === undefined ? headlineTarget : t,
          row: {},
        },
      } as PublicV2Message;
    };
    await ingester.ingest(
      deliveries([
        table("r1", { v: "1" }),
        table("r2", { v: "2" }),
        remove("r1"),
        remove("r2"),
        table("r2", { v: "3" }),
        remove(undefined),
      ]),
    );
    const dataviews = fake.committed.flatMap((b) => b.dataviews ?? []);
    assert.deepEqual(
      dataviews.map((d) => ({ ...d, updated: [...d.updated].sort(), deleted: [...d.deleted].sort() })),
      [
        {
          entity: { gateway: "GW", probe: "p", managedEntity: "me" },
          sampler: "s",
          samplerType: "",
          dataview: "d",
          plugin: "rest-api",
          osType: "Linux",
          updated: ["r2"],
          deleted: ["", "r1"],
        },
      ],
    );
  });

  test("a redelivered batch is stored once", async () => {
    const fake = new FakeStore();
    const ingester = new Ingester(fake.asStore(), logger);
    const batch = deliveries([table("a", { a: "1" }), table("b", { b: "2" })]);
    assert.deepEqual(await ingester.ingest(batch), { stored: 2, duplicates: 0, rejected: [] });
    assert.deepEqual(await ingester.ingest(batch), { stored: 0, duplicates: 2, rejected: [] });
    assert.equal(fake.samples.length, 2);
  });

  test("messages without ids are known by their text: the same backfill twice counts once", async () => {
    const fake = new FakeStore();
    const ingester = new Ingester(fake.asStore(), logger);
    const body: Delivery[] = [table("a", { a: "1" }), table("a", { a: "1" })].map((message) => ({
      id: undefined,
      message,
    }));
    const first = await ingester.ingest(body);
    assert.equal(first.stored, 1, "identical messages are one message");
    assert.equal((await ingester.ingest(body)).duplicates, 2);
  });

  test("the one message the store refuses is found and rejected; the rest is stored", async () => {
    const fake = new FakeStore();
    const ingester = new Ingester(fake.asStore(), logger);
    const messages = Array.from({ length: 9 }, (_, i) =>
      table(`r${i}`, { v: i === 6 ? "POISON" : String(i) }),
    );
    const result = await ingester.ingest(deliveries(messages));
    assert.equal(result.stored, 8);
    assert.equal(result.rejected.length, 1);
    assert.equal(result.rejected[0]?.index, 6);
    assert.match(result.rejected[0]?.reason ?? "", /store refused it: poison/);
    assert.deepEqual(
      fake.samples.map((s) => s.text),
      ["0", "1", "2", "3", "4", "5", "7", "8"],
    );
  });

  test("schema failures, non-JSON and lone surrogates are rejected with the reason before the store", async () => {
    const fake = new FakeStore();
    const ingester = new Ingester(fake.asStore(), logger);
    const result = await ingester.ingest([
      { id: undefined, message: "{", parseError: "Unexpected end" },
      { id: undefined, message: { type: "table" } },
      { id: undefined, message: table("x", { v: "bad \uD800 text" }) },
      { id: undefined, message: table("y", { v: "1" }) },
    ]);
    assert.deepEqual(
      result.rejected.map((r) => r.index),
      [0, 1, 2],
    );
    assert.match(result.rejected[0]?.reason ?? "", /^not JSON/);
    assert.match(result.rejected[1]?.reason ?? "", /^not a public-v2 message/);
    assert.match(result.rejected[2]?.reason ?? "", /well-formed.*\/data\/row\/v/);
    assert.equal(result.stored, 1);
  });

  test("a lone surrogate in a key, or deep in a message, is rejected with the pointer to it", async () => {
    const fake = new FakeStore();
    const ingester = new Ingester(fake.asStore(), logger);
    const result = await ingester.ingest([
      { id: undefined, message: table("a", { "k\uDC00": "1" }) },
      { id: undefined, message: table("b", { v: "1", w: "2\uD83D" }) },
      { id: undefined, message: table("c", { v: "paired \uD83D\uDE00 emoji" }) },
    ]);
    assert.deepEqual(
      result.rejected.map((r) => [r.index, /at (\S+)$/.exec(r.reason)?.[1]]),
      [
        [0, "/data/row/k\uDC00"],
        [1, "/data/row/w"],
      ],
    );
    assert.equal(result.stored, 1);
  });

  test("a store outage is thrown (the consumer retries); nothing is claimed or cached meanwhile", async () => {
    const fake = new FakeStore();
    fake.down = 1;
    const ingester = new Ingester(fake.asStore(), logger);
    const batch = deliveries([
      {
        type: "managedEntity",
        operation: "create",
        data: {
          timestamp: "2026-01-01T00:00:00.000Z",
          target: { gateway: "GW", probe: "p", managedEntity: "me" },
          // Client-sent names are data: `__proto__` is an ordinary attribute name.
          attributes: JSON.parse('{"Region": "emea", "__proto__": "x"}') as Record<string, string>,
        },
      },
      table("a", { a: "1" }),
    ]);
    await assert.rejects(ingester.ingest(batch), /connection refused/);
    assert.equal(fake.claimed.size, 0);
    const again = await ingester.ingest(batch);
    assert.equal(again.stored, 2);
    // The entity was announced in the committed batch, so the table message did not create it again.
    const upserts = fake.committed.flatMap((b) => b.entities);
    assert.equal(upserts.length, 1);
    assert.equal(upserts[0]?.attributes["user.Region"], "emea");
    assert.equal(upserts[0]?.attributes["user.__proto__"], "x");
  });

  test("blank cells are no samples; severity, snooze and userassignment messages are kept as events", async () => {
    const fake = new FakeStore();
    const ingester = new Ingester(fake.asStore(), logger);
    const eventTarget = { gateway: "GW", probe: "p", managedEntity: "me" };
    await ingester.ingest(
      deliveries([
        table("a", { a: "a", b: "", c: "3" }),
        {
          type: "severity",
          operation: "update",
          data: {
            timestamp: "2026-01-01T00:00:01.000Z",
            target: eventTarget,
            data: {
              severity: "CRITICAL",
              active: true,
              snoozed: false,
              snoozedParents: 0,
              userAssigned: false,
            },
          },
        },
        {
          type: "snooze",
          operation: "update",
          data: {
            timestamp: "2026-01-01T00:00:02.000Z",
            target: { gateway: "GW" },
            data: { snoozed: false, unsnoozedBy: "system" },
          },
        },
        {
          type: "userassignment",
          operation: "update",
          data: {
            timestamp: "2026-01-01T00:00:03.000Z",
            target: eventTarget,
            data: { userAssigned: false, unassignedBy: "ann" },
          },
        },
      ]),
    );
    assert.deepEqual(
      fake.samples.map((s) => s.series.column),
      ["a", "c"],
    );
    const events = fake.committed.flatMap((b) => b.events ?? []);
    assert.deepEqual(
      events.map((e) => [e.type, e.entity?.managedEntity ?? null]),
      [
        ["severity", "me"],
        ["snooze", null],
        ["userassignment", "me"],
      ],
    );
  });

  test("a managed entity message stored after that entity's metrics still sets its attributes", async () => {
    const fake = new FakeStore();
    const ingester = new Ingester(fake.asStore(), logger);
    const ids = new MessageIdSource("GW");
    const [announce, metrics] = ids.wrap([
      {
        type: "managedEntity",
        operation: "create",
        data: {
          timestamp: "2025-12-31T23:59:59.000Z", // before the metrics' sampleTime
          target: { gateway: "GW", probe: "p", managedEntity: "me" },
          attributes: { Region: "emea" },
        },
      },
      table("a", { a: "1" }),
    ]);
    // Delivered out of order (a retried batch, or two hubs).
    await ingester.ingest([{ id: metrics?.id, message: metrics?.message }]);
    await ingester.ingest([{ id: announce?.id, message: announce?.message }]);
    const upserts = fake.committed.flatMap((b) => b.entities);
    assert.equal(upserts.length, 2);
    const [created, announced] = upserts;
    assert.ok(created !== undefined && announced !== undefined, "two upserts");
    assert.ok(created.at < announced.at, "the entity made from metrics is older than its announcement");
    assert.equal(announced.attributes["user.Region"], "emea");
  });
});
