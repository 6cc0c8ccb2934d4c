/**
 * `vigil entities [--filter EXPR] [--include-deleted] [--json]` (DESIGN 1, 5.1): the hub's
 * `GET /v0/entities`, as a table (id, the `svc.*` attributes, then the others as `name=value`), or
 * with `--json` the hub's answer exactly as it came.
 */
import type { Command } from "commander";
import { addConnectionOptions, type ConnectionFlags, clientFrom } from "../client/connection-options.js";
import type { HubClient } from "../client/hub-client.js";
import { renderTable } from "../client/table.js";

interface Entity {
  readonly id: string;
  readonly attributes: readonly (readonly [string, string])[];
  readonly isDeleted: boolean;
}

/** The attributes shown in their own columns, in this order (DESIGN 5.1). */
const SVC_COLUMNS = ["svc.name", "svc.gateway", "svc.probe", "svc.hostname", "svc.os-type"] as const;

export interface EntitiesOptions {
  readonly filter?: string;
  readonly includeDeleted?: boolean;
  readonly json?: boolean;
}

/** Reads `[{id, attributes, isDeleted}]`; anything else is an error naming what is wrong. */
function parseEntities(text: string): Entity[] {
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new Error("the hub's /v0/entities answer is not a list");
  return parsed.map((item: unknown) => {
    const { id, attributes, isDeleted } = (item ?? {}) as Record<string, unknown>;
    if (typeof id !== "number" || typeof attributes !== "object" || attributes === null) {
      throw new Error("an entity in the hub's answer has no id or attributes");
    }
    const pairs = Object.entries(attributes).map(([k, v]) => [k, String(v)] as const);
    return { id: String(id), attributes: pairs, isDeleted: isDeleted === true };
  });
}

/** What `vigil entities` prints. */
export async function entitiesText(client: HubClient, options: EntitiesOptions): Promise<string> {
  const query = new URLSearchParams();
  if (options.filter !== undefined) query.set("filter", options.filter);
  if (options.includeDeleted === true) query.set("includeDeleted", "true");
  const search = query.size === 0 ? "" : `?${query.toString()}`;
  const { text } = await client.request("GET", `/v0/entities${search}`);
  if (options.json === true) return text;
  const entities = parseEntities(text);
  if (entities.length === 0) return "no entities";
  const svc = new Set<string>(SVC_COLUMNS);
  const headers = ["id", ...SVC_COLUMNS, "other attributes"];
  if (options.includeDeleted === true) headers.push("deleted");
  const rows = entities.map((entity) => {
    const values = new Map(entity.attributes);
    const others = entity.attributes
      .filter(([k]) => !svc.has(k))
      .map(([k, v]) => `${k}=${v}`)
      .join(", ");
    const row = [entity.id, ...SVC_COLUMNS.map((k) => values.get(k) ?? ""), others];
    if (options.includeDeleted === true) row.push(entity.isDeleted ? "yes" : "");
    return row;
  });
  return renderTable(headers, rows);
}

/** Adds `entities [--filter EXPR] [--include-deleted] [--json]` with the hub connection options. */
export function registerEntities(program: Command): void {
  const command = program
    .command("entities")
    .description("list the hub's entities, optionally those an entity filter selects")
    .option("--filter <expr>", "entity filter, e.g. 'svc.probe = \"p1\"'")
    .option("--include-deleted", "show deleted entities too")
    .option("--json", "print the hub's answer as JSON");
  addConnectionOptions(command).action(async (options: ConnectionFlags & EntitiesOptions) => {
    process.stdout.write(`${await entitiesText(clientFrom(options), options)}\n`);
  });
}
