/**
 * The part of the Store contract behind the hub's listing endpoints (DESIGN 5.1): latest
 * severity per entity, event paging and cell filters, raw samples of one cell, metric names and
 * row names. Every store runs it (STYLE 2). It assumes no dense ids and no insertion order: entity
 * ids are looked up by name, and every result either has a defined order or is compared sorted.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type {
  CellSelector,
  DataviewInput,
  EntityKey,
  EntityUpsert,
  EventInput,
  IngestBatch,
  MetricName,
  ProbeUpsert,
  SampleInput,
  SeriesKey,
  Store,
} from "../../../src/hub/store/store.js";
import { asEpochMs, type EntityId, type EpochMs } from "../../../src/ids.js";
import type { EventTarget } from "../../../src/messages/types.js";
import type { OpenStore } from "./store-contract-writes.js";

const t = (iso: string): EpochMs => asEpochMs(Date.parse(iso));
const A: EntityKey = { gateway: "gw", probe: "p1", managedEntity: "a" };
const B: EntityKey = { gateway: "gw", probe: "p1", managedEntity: "b" };
const C: EntityKey = { gateway: "gw", probe: "p2", managedEntity: "c" };

const up = (key: EntityKey): EntityUpsert => ({
  key,
  attributes: { "svc.name": key.managedEntity },
  deleted: false,
  at: t("2024-01-01T00:00:00Z"),
});

const series = (row: string, column = "util", samplerType = "linux", dataview = "cpu"): SeriesKey => ({
  sampler: "cpu",
  samplerType,
  dataview,
  row,
  column,
});

const sample = (entity: EntityKey, key: SeriesKey, at: string, text: string): SampleInput => {
  const value = Number(text);
  return {
    entity,
    series: key,
    at: t(at),
    text,
    value: Number.isFinite(value) && text !== "" ? value : null,
  };
};

const cell = (row: string | null, column = "util", samplerType: string | null = "linux"): CellSelector => ({
  sampler: "cpu",
  samplerType,
  dataview: "cpu",
  row,
  column,
});

function meTarget(key: EntityKey): EventTarget {
  return { gateway: key.gateway, probe: key.probe, managedEntity: key.managedEntity };
}

function cellTarget(key: EntityKey, row: string | undefined, column: string, type = "linux"): EventTarget {
  return {
    ...meTarget(key),
    type,
    sampler: "cpu",
    dataview: "cpu",
    ...(row === undefined ? {} : { row }),
    column,
  };
}

const severity = (entity: EntityKey, at: string, value: string, target = meTarget(entity)): EventInput => ({
  type: "severity",
  operation: "update",
  at: t(at),
  entity,
  target,
  payload: { severity: value, active: true, snoozed: false, snoozedParents: 0, userAssigned: false },
});

const snooze = (entity: EntityKey, at: string, by: string, target = meTarget(entity)): EventInput => ({
  type: "snooze",
  operation: "update",
  at: t(at),
  entity,
  target,
  payload: { snoozed: true, snoozedBy: by, comment: "", period: "Manual" },
});

async function withStore<T>(open: OpenStore, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await open();
  try {
    await store.migrate();
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Ingests `batches` one transaction each, then returns the ids of the entities by managed entity name. */
async function load(store: Store, batches: readonly IngestBatch[]): Promise<Map<string, EntityId>> {
  for (const batch of batches) await store.ingest(batch);
  const ids = new Map<string, EntityId>();
  for (const e of await store.listEntities({ includeDeleted: true })) {
    ids.set(e.attributes["svc.name"] ?? "", e.id);
  }
  return ids;
}

const idOf = (ids: Map<string, EntityId>, name: string): EntityId => {
  const id = ids.get(name);
  assert.ok(id !== undefined, `no entity ${name}`);
  return id;
};

/** Registers the listing part of the contract for one store implementation (see storeContract). */
export function storeContractApi(name: string, open: OpenStore): void {
  describe(`Store contract (listings): ${name}`, () => {
    describe("latestSeverities", () => {
      it("gives each entity the severity of its latest entity-level event", () =>
        withStore(open, async (store) => {
          const ids = await load(store, [
            {
              entities: [up(A), up(B), up(C)],
              samples: [],
              events: [
                severity(A, "2024-05-01T10:00:00Z", "WARNING"),
                severity(A, "2024-05-01T12:00:00Z", "CRITICAL"),
                // Later, but on a cell: not the entity's own severity.
                severity(A, "2024-05-01T13:00:00Z", "OK", cellTarget(A, "r1", "util")),
                // Earlier in time though stored later: does not win.
                severity(A, "2024-05-01T11:00:00Z", "OK"),
                severity(B, "2024-05-01T10:00:00Z", "OK"),
                snooze(C, "2024-05-01T10:00:00Z", "ann"),
              ],
            },
            { entities: [], samples: [], events: [severity(B, "2024-05-01T09:00:00Z", "CRITICAL")] },
          ]);
          const latest = (await store.latestSeverities())
            .map((s) => [s.entityId, s.severity, s.at] as const)
            .sort((x, y) => x[0] - y[0]);
          const expected = [
            [idOf(ids, "a"), "CRITICAL", t("2024-05-01T12:00:00Z")] as const,
            [idOf(ids, "b"), "OK", t("2024-05-01T10:00:00Z")] as const,
          ].sort((x, y) => x[0] - y[0]);
          assert.deepEqual(latest, expected);
        }));

      it("of two events at one instant, the one stored later wins", () =>
        withStore(open, async (store) => {
          const ids = await load(store, [
            { entities: [up(A)], samples: [], events: [severity(A, "2024-05-01T10:00:00Z", "WARNING")] },
            { entities: [], samples: [], events: [severity(A, "2024-05-01T10:00:00Z", "CRITICAL")] },
          ]);
          assert.deepEqual(
            (await store.latestSeverities()).map((s) => [s.entityId, s.severity]),
            [[idOf(ids, "a"), "CRITICAL"]],
          );
        }));

      it("is empty without severity events", () =>
        withStore(open, async (store) => {
          await load(store, [{ entities: [up(A)], samples: [] }]);
          assert.deepEqual(await store.latestSeverities(), []);
        }));
    });

    describe("deleteBefore (retention)", () => {
      it("removes the samples and events older than the cutoff, across weeks, and keeps the rest", () =>
        withStore(open, async (store) => {
          const key = series("r1");
          const times = [
            "2024-03-01T10:00:00Z", // weeks before the cutoff (a whole partition where there are some)
            "2024-04-10T10:00:00Z",
            "2024-05-01T09:59:59.999Z", // just before
            "2024-05-01T10:00:00Z", // at the cutoff: kept
            "2024-05-20T10:00:00Z",
          ];
          const ids = await load(store, [
            {
              entities: [up(A)],
              samples: times.map((at, i) => sample(A, key, at, String(i))),
              events: times.map((at, i) => severity(A, at, i % 2 === 0 ? "OK" : "WARNING")),
            },
          ]);
          const removed = await store.deleteBefore(t("2024-05-01T10:00:00Z"));
          assert.deepEqual(removed, { samples: 3, events: 3 });
          const page = await store.listSamples({
            entity: idOf(ids, "a"),
            cell: cell("r1"),
            skip: 0,
            limit: 10,
          });
          assert.deepEqual(
            page.samples.map((x) => x.text),
            ["3", "4"],
          );
          const events = await store.listEvents({ limit: 10 });
          assert.deepEqual(
            events.map((e) => e.at),
            [t("2024-05-01T10:00:00Z"), t("2024-05-20T10:00:00Z")],
          );
          assert.deepEqual(await store.deleteBefore(t("2024-05-01T10:00:00Z")), { samples: 0, events: 0 });
          // An old sample backfilled afterwards is stored again (its week is made anew where needed).
          await load(store, [{ entities: [], samples: [sample(A, key, "2024-03-01T10:00:00Z", "late")] }]);
          const again = await store.listSamples({
            entity: idOf(ids, "a"),
            cell: cell("r1"),
            skip: 0,
            limit: 10,
          });
          assert.deepEqual(
            again.samples.map((x) => x.text),
            ["late", "3", "4"],
          );
        }));
    });

    describe("listEvents filters and paging", () => {
      const events: EventInput[] = [
        severity(A, "2024-05-01T10:00:00Z", "WARNING"),
        severity(A, "2024-05-01T10:01:00Z", "CRITICAL", cellTarget(A, "r1", "util")),
        severity(A, "2024-05-01T10:02:00Z", "OK", cellTarget(A, "r2", "util")),
        severity(A, "2024-05-01T10:03:00Z", "OK", cellTarget(A, undefined, "total")),
        snooze(A, "2024-05-01T10:04:00Z", "ann", cellTarget(A, "r1", "util", "other")),
        severity(B, "2024-05-01T10:05:00Z", "OK", cellTarget(B, "r1", "util")),
        snooze(C, "2024-05-01T10:06:00Z", "bob"),
      ];
      /** The minute of each returned event, as a compact picture of which came back. */
      const minutes = (list: readonly { at: number }[]) => list.map((e) => new Date(e.at).getUTCMinutes());

      // biome-ignore format: one line per case (STYLE 16)
      const cases: { name: string; entities?: string[]; cells?: CellSelector[]; expected: number[] }[] = [
        { name: "entities: only events of those entities", entities: ["a", "c"], expected: [0, 1, 2, 3, 4, 6] },
        { name: "entities: none selects nothing", entities: [], expected: [] },
        { name: "a {rowname} cell matches every row of the column, not the headline", cells: [cell(null)], expected: [1, 2, 5] },
        { name: "a null sampler type matches any type", cells: [cell("r1", "util", null)], expected: [1, 4, 5] },
        { name: "a named row matches that row only", cells: [cell("r2")], expected: [2] },
        { name: "an empty row matches the headline", cells: [cell("", "total")], expected: [3] },
        { name: "several cells are OR-ed", cells: [cell("r2"), cell("", "total")], expected: [2, 3] },
        { name: "cells and entities together", entities: ["b"], cells: [cell(null)], expected: [5] },
      ];
      for (const c of cases) {
        it(c.name, () =>
          withStore(open, async (store) => {
            const ids = await load(store, [{ entities: [up(A), up(B), up(C)], samples: [], events }]);
            const list = await store.listEvents({
              ...(c.entities === undefined ? {} : { entities: c.entities.map((n) => idOf(ids, n)) }),
              ...(c.cells === undefined ? {} : { cells: c.cells }),
              limit: 100,
            });
            assert.deepEqual(minutes(list), c.expected);
          }),
        );
      }

      it("skip and limit page through one order without gaps or repeats", () =>
        withStore(open, async (store) => {
          // Same-instant events in separate transactions: arrival decides their order.
          await load(store, [
            { entities: [up(A)], samples: [], events: events.slice(0, 4) },
            { entities: [up(B), up(C)], samples: [], events: events.slice(4) },
            { entities: [], samples: [], events: [severity(A, "2024-05-01T10:00:00Z", "UNKNOWN")] },
          ]);
          const all = await store.listEvents({ limit: 100 });
          assert.equal(all.length, 8);
          const paged = [];
          for (let skip = 0; skip < 10; skip += 3)
            paged.push(...(await store.listEvents({ skip, limit: 3 })));
          assert.deepEqual(paged, all);
          assert.deepEqual(
            all.slice(0, 2).map((e) => e.payload.severity),
            ["WARNING", "UNKNOWN"],
          );
          assert.deepEqual(await store.listEvents({ skip: 8, limit: 3 }), []);
        }));
    });

    describe("listSamples", () => {
      const batch: IngestBatch = {
        entities: [up(A), up(B)],
        samples: [
          sample(A, series("r1"), "2024-05-01T10:00:02Z", "3"),
          sample(A, series("r1"), "2024-05-01T10:00:00Z", "1"),
          sample(A, series("r1"), "2024-05-01T10:00:01Z", "n/a"),
          sample(A, series("r1", "util", "other"), "2024-05-01T10:00:01Z", "7"),
          sample(A, series("r2"), "2024-05-01T10:00:00Z", "99"),
          sample(A, series("", "total"), "2024-05-01T10:00:00Z", "42"),
          sample(B, series("r1"), "2024-05-01T10:00:00Z", "5"),
        ],
      };
      // biome-ignore format: one line per case (STYLE 16)
      const cases: { name: string; cell: CellSelector; from?: string; to?: string; skip?: number; limit?: number; total: number; values: string[] }[] = [
        { name: "every value of one cell in time order, text ones too", cell: cell("r1"), total: 3, values: ["1", "n/a", "3"] },
        { name: "a null sampler type takes every type, ties by type", cell: cell("r1", "util", null), total: 4, values: ["1", "n/a", "7", "3"] },
        { name: "from is inclusive, to exclusive", cell: cell("r1"), from: "2024-05-01T10:00:01Z", to: "2024-05-01T10:00:02Z", total: 1, values: ["n/a"] },
        { name: "skip and limit page; totalCount counts all", cell: cell("r1"), skip: 1, limit: 1, total: 3, values: ["n/a"] },
        { name: "skip past the end: no values, the count stays", cell: cell("r1"), skip: 5, total: 3, values: [] },
        { name: "a headline is the empty row", cell: cell("", "total"), total: 1, values: ["42"] },
        { name: "an unknown cell has nothing", cell: cell("r9"), total: 0, values: [] },
      ];
      for (const c of cases) {
        it(c.name, () =>
          withStore(open, async (store) => {
            const ids = await load(store, [batch]);
            const page = await store.listSamples({
              entity: idOf(ids, "a"),
              cell: c.cell,
              ...(c.from === undefined ? {} : { from: t(c.from) }),
              ...(c.to === undefined ? {} : { to: t(c.to) }),
              skip: c.skip ?? 0,
              limit: c.limit ?? 100,
            });
            assert.equal(page.totalCount, c.total);
            assert.deepEqual(
              page.samples.map((s) => s.text),
              c.values,
            );
          }),
        );
      }

      it("samples of one cell at one instant are ordered by their text, canonical or not", () =>
        withStore(open, async (store) => {
          const at = "2024-05-01T10:00:00Z";
          const texts = ["9.50", "10", "9", "1e1", "10.0", "0.5"];
          const ids = await load(store, [
            { entities: [up(A)], samples: texts.map((text) => sample(A, series("r1"), at, text)) },
          ]);
          const page = await store.listSamples({
            entity: idOf(ids, "a"),
            cell: cell("r1"),
            skip: 0,
            limit: 100,
          });
          assert.deepEqual(
            page.samples.map((s) => s.text),
            ["0.5", "10", "10.0", "1e1", "9", "9.50"],
          );
          const second = await store.listSamples({
            entity: idOf(ids, "a"),
            cell: cell("r1"),
            skip: 1,
            limit: 2,
          });
          assert.deepEqual(
            second.samples.map((s) => s.text),
            ["10", "10.0"],
          );
        }));

      it("gives each sample its time", () =>
        withStore(open, async (store) => {
          const ids = await load(store, [batch]);
          const page = await store.listSamples({
            entity: idOf(ids, "b"),
            cell: cell("r1"),
            skip: 0,
            limit: 10,
          });
          assert.deepEqual(page.samples, [{ at: t("2024-05-01T10:00:00Z"), text: "5" }]);
        }));
    });

    describe("listMetricNames and listRowNames", () => {
      const batch: IngestBatch = {
        entities: [up(A), up(B), up(C)],
        samples: [
          sample(A, series("r1"), "2024-05-01T10:00:00Z", "1"),
          sample(A, series("r2"), "2024-05-01T12:00:00Z", "2"),
          sample(A, series("r3", "state"), "2024-05-01T10:00:00Z", "up"),
          sample(A, series("", "total"), "2024-05-01T10:00:00Z", "3"),
          sample(B, series("r9"), "2024-05-01T11:00:00Z", "4"),
          sample(B, series("r8", "util", "other"), "2024-05-01T11:00:00Z", "4"),
          sample(C, series("r7"), "2024-05-01T11:00:00Z", "4"),
        ],
      };
      const text = (names: Awaited<ReturnType<Store["listMetricNames"]>>, ids: Map<string, EntityId>) => {
        const byId = new Map([...ids].map(([n, id]) => [id, n]));
        return names
          .map(
            (m) =>
              `${byId.get(m.entityId)} ${m.sampler}(${m.samplerType})/${m.dataview}/${m.headline ? "" : "*"}/${m.column}`,
          )
          .sort();
      };

      it("folds rows, marks headlines, and leaves out text-only cells unless asked", () =>
        withStore(open, async (store) => {
          const ids = await load(store, [batch]);
          const entities = [idOf(ids, "a"), idOf(ids, "b")];
          assert.deepEqual(text(await store.listMetricNames({ entities, includeNonNumeric: false }), ids), [
            "a cpu(linux)/cpu/*/util",
            "a cpu(linux)/cpu//total",
            "b cpu(linux)/cpu/*/util",
            "b cpu(other)/cpu/*/util",
          ]);
          assert.deepEqual(text(await store.listMetricNames({ entities, includeNonNumeric: true }), ids), [
            "a cpu(linux)/cpu/*/state",
            "a cpu(linux)/cpu/*/util",
            "a cpu(linux)/cpu//total",
            "b cpu(linux)/cpu/*/util",
            "b cpu(other)/cpu/*/util",
          ]);
          assert.deepEqual(await store.listMetricNames({ entities: [], includeNonNumeric: true }), []);
        }));

      // biome-ignore format: one line per case (STYLE 16)
      const cases: { name: string; entities: string[]; samplerType: string | null; column: string | null; since?: string; rows: string[] }[] = [
        { name: "rows of one column, never the headline", entities: ["a"], samplerType: "linux", column: "util", rows: ["r1", "r2"] },
        { name: "rows of every column", entities: ["a"], samplerType: "linux", column: null, rows: ["r1", "r2", "r3"] },
        { name: "updatedSince keeps rows with a sample at or after it", entities: ["a"], samplerType: "linux", column: null, since: "2024-05-01T12:00:00Z", rows: ["r2"] },
        { name: "across entities, any sampler type", entities: ["a", "b"], samplerType: null, column: "util", rows: ["r1", "r2", "r8", "r9"] },
        { name: "no entities, no rows", entities: [], samplerType: null, column: null, rows: [] },
      ];
      for (const c of cases) {
        it(`listRowNames: ${c.name}`, () =>
          withStore(open, async (store) => {
            const ids = await load(store, [batch]);
            const rows = await store.listRowNames({
              entities: c.entities.map((n) => idOf(ids, n)),
              sampler: "cpu",
              samplerType: c.samplerType,
              dataview: "cpu",
              column: c.column,
              ...(c.since === undefined ? {} : { updatedSince: t(c.since) }),
            });
            assert.deepEqual([...rows].sort(), c.rows);
          }));
      }
    });

    describe("what the store keeps of dataviews, series and probes (DESIGN 5.1)", () => {
      const dv = (
        entity: EntityKey,
        plugin: string,
        rows: { updated?: string[]; deleted?: string[] } = {},
        dataview = "cpu",
      ): DataviewInput => ({
        entity,
        sampler: "cpu",
        samplerType: "linux",
        dataview,
        plugin,
        osType: "Linux",
        updated: rows.updated ?? [],
        deleted: rows.deleted ?? [],
      });
      const probe = (p: Partial<Omit<ProbeUpsert, "at">> & { at: string }): ProbeUpsert => ({
        gateway: "gw",
        probe: "p1",
        osType: "Linux",
        hostname: null,
        fallback: false,
        ...p,
        at: t(p.at),
      });
      const names = async (store: Store, entities: EntityId[]): Promise<Map<string, MetricName>> => {
        const out = new Map<string, MetricName>();
        for (const m of await store.listMetricNames({ entities, includeNonNumeric: true })) {
          out.set(`${m.dataview}/${m.headline ? "" : "*"}/${m.column}`, m);
        }
        return out;
      };
      const get = (map: Map<string, MetricName>, key: string): MetricName => {
        const m = map.get(key);
        assert.ok(m !== undefined, `no metric ${key} in ${[...map.keys()].join(", ")}`);
        return m;
      };

      it("a series is numeric once it has held a number, also after text; text-only stays not numeric", () =>
        withStore(open, async (store) => {
          const ids = await load(store, [
            {
              entities: [up(A)],
              samples: [
                sample(A, series("r1", "state"), "2024-05-01T10:00:00Z", "up"),
                sample(A, series("r1", "util"), "2024-05-01T10:00:00Z", "n/a"),
              ],
            },
          ]);
          const a = idOf(ids, "a");
          let m = await names(store, [a]);
          assert.equal(get(m, "cpu/*/state").numeric, false);
          assert.equal(get(m, "cpu/*/util").numeric, false);
          assert.deepEqual(await store.listMetricNames({ entities: [a], includeNonNumeric: false }), []);
          // The series is cached now (not numeric): a number flips it, text afterwards keeps it.
          await store.ingest({
            entities: [],
            samples: [sample(A, series("r1", "util"), "2024-05-01T10:01:00Z", "7")],
          });
          await store.ingest({
            entities: [],
            samples: [sample(A, series("r1", "util"), "2024-05-01T10:02:00Z", "x")],
          });
          m = await names(store, [a]);
          assert.equal(get(m, "cpu/*/state").numeric, false);
          assert.equal(get(m, "cpu/*/util").numeric, true);
          // Retention removes the samples, not what the series has held.
          await store.deleteBefore(t("2030-01-01T00:00:00Z"));
          const numeric = await store.listMetricNames({ entities: [a], includeNonNumeric: false });
          assert.deepEqual(
            numeric.map((n) => n.column),
            ["util"],
          );
        }));

      it("rows of one column fold: numeric when any row has held a number", () =>
        withStore(open, async (store) => {
          const ids = await load(store, [
            {
              entities: [up(A)],
              samples: [
                sample(A, series("r1"), "2024-05-01T10:00:00Z", "idle"),
                sample(A, series("r2"), "2024-05-01T10:00:00Z", "3"),
              ],
            },
          ]);
          assert.equal(get(await names(store, [idOf(ids, "a")]), "cpu/*/util").numeric, true);
        }));

      it("keeps the plug-in and OS type the messages carried, null when none did, the latest when they change", () =>
        withStore(open, async (store) => {
          const ids = await load(store, [
            {
              entities: [up(A)],
              samples: [
                sample(A, series("r1"), "2024-05-01T10:00:00Z", "1"),
                sample(A, series("r1", "util", "linux", "disk"), "2024-05-01T10:00:00Z", "1"),
              ],
              dataviews: [dv(A, "rest-api", { updated: ["r1"] })],
            },
          ]);
          const a = idOf(ids, "a");
          let m = await names(store, [a]);
          assert.equal(get(m, "cpu/*/util").plugin, "rest-api");
          assert.equal(get(m, "cpu/*/util").osType, "Linux");
          assert.equal(get(m, "disk/*/util").plugin, null);
          assert.equal(get(m, "disk/*/util").osType, null);
          await store.ingest({
            entities: [],
            samples: [],
            dataviews: [dv(A, "fkm", { updated: ["r1"] }, "disk")],
          });
          m = await names(store, [a]);
          assert.equal(get(m, "disk/*/util").plugin, "fkm");
          assert.equal(get(m, "cpu/*/util").plugin, "rest-api");
        }));

      it("gives each dataview one stable id, shared by its rows, columns and headlines", () =>
        withStore(open, async (store) => {
          const ids = await load(store, [
            {
              entities: [up(A), up(B)],
              samples: [
                sample(A, series("r1"), "2024-05-01T10:00:00Z", "1"),
                sample(A, series("", "total"), "2024-05-01T10:00:00Z", "1"),
                sample(A, series("r1", "util", "linux", "disk"), "2024-05-01T10:00:00Z", "1"),
                sample(B, series("r1"), "2024-05-01T10:00:00Z", "1"),
              ],
            },
          ]);
          const a = await names(store, [idOf(ids, "a")]);
          const b = await names(store, [idOf(ids, "b")]);
          const cpu = get(a, "cpu/*/util").dataviewId;
          assert.ok(Number.isSafeInteger(cpu) && cpu > 0);
          assert.equal(get(a, "cpu//total").dataviewId, cpu);
          assert.notEqual(get(a, "disk/*/util").dataviewId, cpu);
          assert.notEqual(get(b, "cpu/*/util").dataviewId, cpu);
          await store.ingest({
            entities: [],
            samples: [sample(A, series("r2", "other"), "2024-05-02T10:00:00Z", "1")],
            dataviews: [dv(A, "rest-api", { updated: ["r2"] })],
          });
          assert.equal(get(await names(store, [idOf(ids, "a")]), "cpu/*/other").dataviewId, cpu);
        }));

      it("a dataview is deleted once every row and the headlines are deleted since their update, or its entity is", () =>
        withStore(open, async (store) => {
          const ids = await load(store, [
            {
              entities: [up(A), up(B)],
              samples: [
                sample(A, series("r1"), "2024-05-01T10:00:00Z", "1"),
                sample(A, series("r2"), "2024-05-01T10:00:00Z", "1"),
                sample(A, series("", "total"), "2024-05-01T10:00:00Z", "2"),
                sample(B, series("r1"), "2024-05-01T10:00:00Z", "1"),
              ],
              dataviews: [
                dv(A, "rest-api", { updated: ["r1", "r2", ""] }),
                dv(B, "rest-api", { updated: ["r1"] }),
              ],
            },
          ]);
          const a = idOf(ids, "a");
          const deleted = async () => get(await names(store, [a]), "cpu/*/util").dataviewDeleted;
          assert.equal(await deleted(), false);
          await store.ingest({
            entities: [],
            samples: [],
            dataviews: [dv(A, "rest-api", { deleted: ["r1", "r2"] })],
          });
          assert.equal(await deleted(), false, "the headlines are not deleted");
          await store.ingest({
            entities: [],
            samples: [],
            dataviews: [dv(A, "rest-api", { deleted: [""] })],
          });
          assert.equal(await deleted(), true);
          assert.equal(get(await names(store, [a]), "cpu//total").dataviewDeleted, true);
          // An update of one row brings the dataview back.
          await store.ingest({
            entities: [],
            samples: [sample(A, series("r2"), "2024-05-02T10:00:00Z", "1")],
            dataviews: [dv(A, "rest-api", { updated: ["r2"] })],
          });
          assert.equal(await deleted(), false);
          // A deleted entity's dataviews are deleted.
          const b = idOf(ids, "b");
          assert.equal(get(await names(store, [b]), "cpu/*/util").dataviewDeleted, false);
          await store.ingest({
            entities: [{ ...up(B), deleted: true, at: t("2024-06-01T00:00:00Z") }],
            samples: [],
          });
          assert.equal(get(await names(store, [b]), "cpu/*/util").dataviewDeleted, true);
        }));

      it("a delete of a dataview the store does not hold stores nothing", () =>
        withStore(open, async (store) => {
          await store.ingest({
            entities: [],
            samples: [],
            dataviews: [dv(C, "rest-api", { deleted: ["r1"] })],
          });
          assert.deepEqual(await store.listEntities({ includeDeleted: true }), []);
        }));

      it("every entity of a probe shows the probe's host name and OS type as stored", () =>
        withStore(open, async (store) => {
          const ids = await load(store, [
            {
              entities: [
                { ...up(A), attributes: { "svc.name": "a", "svc.probe": "p1", "user.Team": "x" } },
                up(B),
                up(C),
              ],
              samples: [],
              probes: [probe({ at: "2024-01-01T00:00:00Z", hostname: "host-1", osType: "Linux" })],
            },
          ]);
          const attrs = async (name: string) => (await store.getEntity(idOf(ids, name)))?.attributes;
          assert.deepEqual(await attrs("a"), {
            "svc.name": "a",
            "svc.probe": "p1",
            "svc.hostname": "host-1",
            "svc.os-type": "Linux",
            "user.Team": "x",
          });
          assert.equal((await attrs("b"))?.["svc.hostname"], "host-1");
          assert.equal((await attrs("c"))?.["svc.hostname"], undefined, "another probe");
          // A later probe message replaces the details, an older one does not; the fallback of
          // metrics never replaces a probe message's.
          await store.ingest({
            entities: [],
            samples: [],
            probes: [
              probe({ at: "2024-02-01T00:00:00Z", hostname: "host-2", osType: "Windows" }),
              probe({ at: "2024-01-15T00:00:00Z", hostname: "host-old", osType: "Old" }),
              probe({ at: "2024-03-01T00:00:00Z", osType: "Metrics", fallback: true }),
            ],
          });
          const listed = (await store.listEntities({ includeDeleted: false })).find(
            (e) => e.id === idOf(ids, "b"),
          );
          assert.equal(listed?.attributes["svc.hostname"], "host-2");
          assert.equal(listed?.attributes["svc.os-type"], "Windows");
          assert.deepEqual(await store.listProbes(), [
            { gateway: "gw", probe: "p1", osType: "Windows", hostname: "host-2" },
          ]);
        }));

      it("the fallback of metrics gives a probe's OS type until a probe message comes", () =>
        withStore(open, async (store) => {
          const ids = await load(store, [
            {
              entities: [],
              samples: [sample(C, series("r1"), "2024-05-01T10:00:00Z", "1")],
              probes: [probe({ probe: "p2", at: "2024-05-01T10:00:00Z", osType: "SunOS", fallback: true })],
            },
          ]);
          const c = idOf(ids, "c");
          assert.equal((await store.getEntity(c))?.attributes["svc.os-type"], "SunOS");
          assert.equal((await store.getEntity(c))?.attributes["svc.hostname"], undefined);
          await store.ingest({
            entities: [],
            samples: [],
            probes: [probe({ probe: "p2", at: "2024-05-01T09:00:00Z", osType: "Linux", hostname: "h" })],
          });
          assert.equal((await store.getEntity(c))?.attributes["svc.os-type"], "Linux");
          assert.equal((await store.getEntity(c))?.attributes["svc.hostname"], "h");
        }));
    });
  });
}
