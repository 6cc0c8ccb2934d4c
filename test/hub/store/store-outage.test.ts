/**
 * Store outages become 503 (src/hub/store/store-outage.ts): which errors count as an
 * outage, and that a wrapped store turns them into SERVICE_UNAVAILABLE with Retry-After while data
 * errors and bugs pass through unchanged. test/faults/ shows the same against a real PostgreSQL
 * restart and a real full disk.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { VigilError } from "../../../src/errors/catalog.js";
import { type Store, StoreDataError } from "../../../src/hub/store/store.js";
import { outageReason, withOutageErrors } from "../../../src/hub/store/store-outage.js";

const coded = (code: string, name = "Error"): Error => Object.assign(new Error("x"), { code, name });

const CASES: [string, unknown, string | undefined][] = [
  ["a refused connection", coded("ECONNREFUSED"), "ECONNREFUSED"],
  ["the postgres client's closed connection", coded("CONNECTION_CLOSED"), "CONNECTION_CLOSED"],
  ["the postgres client's connect timeout", coded("CONNECT_TIMEOUT"), "CONNECT_TIMEOUT"],
  ["a full disk (Node)", coded("ENOSPC"), "ENOSPC"],
  [
    "a full disk (DuckDB text)",
    new Error('IO Error: Could not write file "x": No space left on device'),
    "No space left on device",
  ],
  ["PostgreSQL shutting down", coded("57P01", "PostgresError"), "SQLSTATE 57P01"],
  ["PostgreSQL starting up", coded("57P03", "PostgresError"), "SQLSTATE 57P03"],
  ["PostgreSQL disk full", coded("53100", "PostgresError"), "SQLSTATE 53100"],
  ["PostgreSQL connection failure", coded("08006", "PostgresError"), "SQLSTATE 08006"],
  ["a cancelled query is no outage", coded("57014", "PostgresError"), undefined],
  ["a unique violation is no outage", coded("23505", "PostgresError"), undefined],
  ["an SQLSTATE-like code from elsewhere is no outage", coded("08006"), undefined],
  ["a plain bug is no outage", new TypeError("x is undefined"), undefined],
  ["an outage in the cause chain", new Error("wrapped", { cause: coded("ECONNRESET") }), "ECONNRESET"],
  [
    "an outage inside an AggregateError",
    new AggregateError([new Error("a"), coded("ECONNREFUSED")]),
    "ECONNREFUSED",
  ],
  ["not an error at all", "ECONNREFUSED", undefined],
];

describe("store outages", () => {
  for (const [name, error, reason] of CASES) {
    test(name, () => assert.equal(outageReason(error), reason));
  }

  test("a wrapped store answers outages as 503 with Retry-After and passes other errors through", async () => {
    const failures: unknown[] = [
      coded("CONNECTION_CLOSED"),
      new StoreDataError("too many series"),
      new TypeError("bug"),
    ];
    const failing = {
      kind: "postgres",
      listEntities: () => Promise.reject(failures.shift()),
    } as unknown as Store;
    const store = withOutageErrors(failing);
    await assert.rejects(store.listEntities({ includeDeleted: false }), (error: unknown) => {
      assert.ok(error instanceof VigilError);
      assert.equal(error.status, 503);
      assert.equal(error.code, "SERVICE_UNAVAILABLE");
      assert.equal(error.headers["Retry-After"], "1");
      assert.match(error.body, /postgres store is unavailable \(CONNECTION_CLOSED\)/);
      return true;
    });
    await assert.rejects(store.listEntities({ includeDeleted: false }), StoreDataError);
    await assert.rejects(store.listEntities({ includeDeleted: false }), TypeError);
  });
});
