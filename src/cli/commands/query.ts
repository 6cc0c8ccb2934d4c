/**
 * `vigil query FILE.json [--json]` (DESIGN 1, 5.3): sends the file to `POST /v0/metrics/query`
 * exactly as written (the hub validates it and names the wrong field), and prints the answer as a
 * table — one line per bucket and group, one column per identifier and aggregation with its unit —
 * or with `--json` the hub's answer exactly as it came. `-` reads the query from standard input.
 */
import { open } from "node:fs/promises";
import type { Command } from "commander";
import { DEFAULT_BODY_LIMIT_BYTES } from "../../config/defaults.js";
import { addConnectionOptions, type ConnectionFlags, clientFrom } from "../client/connection-options.js";
import type { HubClient } from "../client/hub-client.js";
import { renderTable } from "../client/table.js";

/** A query file larger than the hub's request limit (10 MiB) would be refused; it is not read whole. */
const QUERY_FILE_LIMIT_BYTES = DEFAULT_BODY_LIMIT_BYTES;

/** Reads the query text from a file or `-` (stdin), at most QUERY_FILE_LIMIT_BYTES. */
export async function readQueryFile(path: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const handle = path === "-" ? undefined : await open(path, "r");
  const stream = handle === undefined ? process.stdin : handle.createReadStream();
  try {
    for await (const chunk of stream) {
      const buffer = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
      size += buffer.byteLength;
      if (size > QUERY_FILE_LIMIT_BYTES) {
        throw new Error(`${path} is larger than ${QUERY_FILE_LIMIT_BYTES} bytes; no hub takes such a query`);
      }
      chunks.push(buffer);
    }
  } finally {
    await handle?.close();
  }
  return Buffer.concat(chunks).toString("utf8");
}

type Row = Record<string, unknown>;

function isObject(value: unknown): value is Row {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** The metric query answer `{schema, data}` as a table. */
export function queryTable(text: string): string {
  const parsed: unknown = JSON.parse(text);
  if (!isObject(parsed) || !Array.isArray(parsed.data) || !isObject(parsed.schema)) {
    throw new Error("the hub's metric query answer has no schema and data");
  }
  const data = parsed.data.filter(isObject);
  if (data.length === 0) return "no data in the range";
  const metricsSchema = isObject(parsed.schema.metrics) ? parsed.schema.metrics : {};
  // Columns: bucket, every group field seen, then identifier × aggregation in the schema's order.
  const groupFields = [...new Set(data.flatMap((d) => (isObject(d.group) ? Object.keys(d.group) : [])))];
  const metricColumns: { id: string; aggregation: string; header: string }[] = [];
  for (const [id, aggregations] of Object.entries(metricsSchema)) {
    if (!isObject(aggregations)) continue;
    for (const [aggregation, schema] of Object.entries(aggregations)) {
      const unit = isObject(schema) && typeof schema.unit === "string" ? schema.unit : "none";
      const header = unit === "none" ? `${id} ${aggregation}` : `${id} ${aggregation} (${unit})`;
      metricColumns.push({ id, aggregation, header });
    }
  }
  const rows = data.map((d) => {
    const group = isObject(d.group) ? new Map(Object.entries(d.group)) : new Map<string, unknown>();
    const metrics = isObject(d.metrics) ? new Map(Object.entries(d.metrics)) : new Map<string, unknown>();
    return [
      cellText(d.bucket),
      ...groupFields.map((field) => cellText(group.get(field))),
      ...metricColumns.map(({ id, aggregation }) => {
        const values = metrics.get(id);
        return isObject(values) ? cellText(new Map(Object.entries(values)).get(aggregation)) : "";
      }),
    ];
  });
  return renderTable(["bucket", ...groupFields, ...metricColumns.map((c) => c.header)], rows);
}

/** What `vigil query FILE` prints. */
export async function queryText(client: HubClient, path: string, json: boolean): Promise<string> {
  const body = await readQueryFile(path);
  const { text } = await client.request("POST", "/v0/metrics/query", {
    text: body,
    contentType: "application/json",
  });
  return json ? text : queryTable(text);
}

/** Adds `query FILE.json [--json]` with the hub connection options. */
export function registerQuery(program: Command): void {
  const command = program
    .command("query")
    .description("run a metric query from a JSON file ('-' for standard input)")
    .argument("<file>", "the query as JSON: {filter, metrics, aggregations, bucketing, zoneId, …}")
    .option("--json", "print the hub's answer as JSON");
  addConnectionOptions(command).action(
    async (file: string, options: ConnectionFlags & { json?: boolean }) => {
      process.stdout.write(`${await queryText(clientFrom(options), file, options.json === true)}\n`);
    },
  );
}
