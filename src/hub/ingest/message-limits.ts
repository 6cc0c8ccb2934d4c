/**
 * The setup's `limits` (DESIGN 5.4b, docs/security.md "Limits") on a public-v2 message the hub
 * receives, from backfill or from any bus (the hub trusts no gateway): every name of its target
 * (gateway, probe, managed entity, sampler, type, dataview, column, plug-in; a row
 * `DUPLICATE_SUFFIX_BYTES` more, for `_duplicate<N>`) and every column or headline name at most
 * `nameBytes`; its `filter.osType` at most `attributeValueBytes`; every cell,
 * headline value and event text at most `cellBytes`; a managed entity at most
 * `attributesPerEntity` attributes, each named within `nameBytes` with a value within
 * `attributeValueBytes`, and a probe's parameters likewise. A message beyond one is rejected with the
 * reason and the limit (backfill answers it, a bus consumer dead-letters it) and never reaches the
 * store. Checked after the schema, on values JSON.parse made; the depth of the text was checked
 * before it was parsed.
 */
import { type DataLimits, DUPLICATE_SUFFIX_BYTES, overBytes } from "../../limits/data-limits.js";
import { type LimitName, limitReason, quoted } from "../../limits/limit-refusals.js";
import type { PublicV2Message } from "../../messages/types.js";

/** Why a message is beyond a limit: the limit, and the reason a rejection gives. */
export interface LimitBreach {
  readonly limit: LimitName;
  readonly reason: string;
}

const TARGET_NAMES = ["gateway", "probe", "managedEntity", "sampler", "type", "dataview", "column"] as const;

/** The first limit `message` (valid public-v2) is beyond, or undefined when it is within all. */
export function messageBeyondLimits(message: PublicV2Message, limits: DataLimits): LimitBreach | undefined {
  const target = message.data.target as Readonly<Record<string, unknown>>;
  for (const field of TARGET_NAMES) {
    const breach = nameBreach(target[field], `/data/target/${field}`, limits.nameBytes);
    if (breach !== undefined) return breach;
  }
  const row = nameBreach(target.row, "/data/target/row", limits.nameBytes + DUPLICATE_SUFFIX_BYTES);
  if (row !== undefined) return row;
  const filter = target.filter as Readonly<Record<string, unknown>> | undefined;
  if (filter !== undefined) {
    // The probe's OS type is one of its parameters; the plug-in's name is a name.
    const osType = filter.osType;
    if (typeof osType === "string" && overBytes(osType, limits.attributeValueBytes))
      return breach("attributeValueBytes", "/data/target/filter/osType", osType, limits.attributeValueBytes);
    const plugin = nameBreach(filter.pluginName, "/data/target/filter/pluginName", limits.nameBytes);
    if (plugin !== undefined) return plugin;
  }
  switch (message.type) {
    case "table":
    case "headline":
      return cellsBreach(message.data.row, limits);
    case "managedEntity":
      return attributesBreach(message.data.attributes, "/data/attributes", limits);
    case "probe":
      return attributesBreach(message.data.parameters, "/data/parameters", limits);
    default:
      return textBreach(message.data.data, "/data/data", limits.cellBytes);
  }
}

function nameBreach(name: unknown, path: string, nameBytes: number): LimitBreach | undefined {
  if (typeof name !== "string" || !overBytes(name, nameBytes)) return undefined;
  return breach("nameBytes", `${path} ${quoted(name)}`, name, nameBytes);
}

/** Column (or headline) names and their values. */
function cellsBreach(row: Readonly<Record<string, string>>, limits: DataLimits): LimitBreach | undefined {
  const { nameBytes, cellBytes } = limits;
  for (const column in row) {
    if (overBytes(column, nameBytes))
      return breach("nameBytes", `/data/row: column ${quoted(column)}`, column, nameBytes);
    const value = row[column] as string;
    if (overBytes(value, cellBytes))
      return breach("cellBytes", `/data/row/${column.slice(0, 64)}`, value, cellBytes);
  }
  return undefined;
}

function attributesBreach(
  attributes: Readonly<Record<string, string>>,
  path: string,
  limits: DataLimits,
): LimitBreach | undefined {
  const { nameBytes, attributeValueBytes, attributesPerEntity } = limits;
  let count = 0;
  for (const key in attributes) {
    count += 1;
    if (count > attributesPerEntity) {
      const all = Object.keys(attributes).length;
      return {
        limit: "attributesPerEntity",
        reason: limitReason("attributesPerEntity", path, all, attributesPerEntity),
      };
    }
    if (overBytes(key, nameBytes)) return breach("nameBytes", `${path}: name ${quoted(key)}`, key, nameBytes);
    const value = attributes[key] as string;
    if (overBytes(value, attributeValueBytes))
      return breach("attributeValueBytes", `${path}/${key.slice(0, 64)}`, value, attributeValueBytes);
  }
  return undefined;
}

/** Every string of an event's payload (a severity's cell value, a comment, a user) within `cellBytes`. */
function textBreach(value: unknown, path: string, cellBytes: number): LimitBreach | undefined {
  if (typeof value === "string")
    return overBytes(value, cellBytes) ? breach("cellBytes", path, value, cellBytes) : undefined;
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    const found = textBreach(inner, `${path}/${key.slice(0, 64)}`, cellBytes);
    if (found !== undefined) return found;
  }
  return undefined;
}

function breach(limit: LimitName, what: string, text: string, setting: number): LimitBreach {
  return { limit, reason: limitReason(limit, what, Buffer.byteLength(text), setting) };
}
