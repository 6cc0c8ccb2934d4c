/**
 * The DuckDB store against the listing part of the Store contract (store-contract-api.ts), in a
 * file of its own: with the rest of the contract in duckdb-store.test.ts, one file ran close to
 * the test runner's limit per file.
 */
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import { storeContractApi } from "./store-contract-api.js";

storeContractApi("duckdb :memory:", (options) => createDuckDbStore({ ...options, path: ":memory:" }));
