/**
 * The aggregations of the metric query (DESIGN 5.3, the seed's aggregation table), served by
 * `GET /v0/metrics/aggregations`, and the parser of one requested aggregation.
 */

import { VigilError } from "../../errors/catalog.js";
import { type Aggregation, type AggregationName, MAX_PERCENTILE_DECIMALS } from "../store/store.js";

/**
 * One parameter of an aggregation. Every value is a string: ITRS's Go client (`cordial/pkg/gwhub`)
 * decodes `parameters` as a list of string maps (DESIGN 5.1), so `type` names the Go-style type.
 */
export interface AggregationParameter {
  readonly name: string;
  readonly type: string;
  readonly description: string;
}

export interface AggregationInfo {
  readonly parameters: readonly AggregationParameter[];
  readonly description: string;
}

/** Every aggregation, in the order `GET /v0/metrics/aggregations` lists them. */
export const AGGREGATIONS: Readonly<Record<AggregationName, AggregationInfo>> = {
  "svc.count": { parameters: [], description: "Count of all numeric values." },
  "svc.sum": { parameters: [], description: "Sum of all values." },
  "svc.min": { parameters: [], description: "Smallest value." },
  "svc.max": { parameters: [], description: "Largest value." },
  "svc.avg": { parameters: [], description: "Mean of all values." },
  "svc.var": { parameters: [], description: "Population variance of all values (divides by n)." },
  "svc.stddev": {
    parameters: [],
    description: "Population standard deviation of all values (divides by n).",
  },
  "svc.first": { parameters: [], description: "Value of the sample with the earliest timestamp." },
  "svc.last": { parameters: [], description: "Value of the sample with the latest timestamp." },
  "svc.percentile": {
    parameters: [
      {
        name: "p",
        type: "float64",
        description:
          "The percentile as a fraction from 0 to 1, written as a plain decimal (0.95 for the 95th).",
      },
    ],
    description:
      "Exact percentile, nearest rank: the value at 1-based position ceil(p*n) of the sorted values, " +
      "with 0 <= p <= 1 written as a decimal, e.g. svc.percentile(0.95); p = 0 gives the minimum.",
  },
};

const NAMES = Object.keys(AGGREGATIONS) as AggregationName[];

/** Digits cap on p: exact ceil(p*n) arithmetic in the stores stays small. */
const MAX_P_LENGTH = 32;

/** A plain decimal literal: `0.95`, `1`, `.5`; no sign, exponent, or trailing dot. */
const DECIMAL = /^(?:\d+(?:\.\d+)?|\.\d+)$/;

function isName(text: string): text is AggregationName {
  return (NAMES as string[]).includes(text);
}

/** True when the decimal literal (matching DECIMAL) is at most 1, decided on its digits. */
function atMostOne(p: string): boolean {
  const [whole = "", fraction = ""] = p.split(".");
  const integer = whole.replace(/^0+/, "");
  if (integer === "") return true;
  return integer === "1" && /^0*$/.test(fraction);
}

/**
 * Parses the aggregation at `aggregations[index]` of a metric query. Names are matched exactly
 * (case-sensitive) after trimming surrounding spaces; `label` keeps `text` as written, since it is the
 * key of the response. `svc.percentile(p)` needs p, a plain decimal literal with 0 <= p <= 1
 * (`0.95`, `1`, `.5`; spaces inside the parentheses allowed), kept as written after trimming so the
 * stores compute ceil(p*n) exactly; exponents, signs, NaN and values above 1 are rejected. Any
 * error is INVALID_QUERY for field `aggregations[index]`.
 */
export function parseAggregation(text: string, index: number): Aggregation {
  const field = `aggregations[${index}]`;
  const fail = (detail: string): VigilError => new VigilError("INVALID_QUERY", { field, detail });
  const trimmed = text.trim();
  const call = /^([^()]*)\(([^()]*)\)$/.exec(trimmed);
  const name = (call?.[1] ?? trimmed).trim();
  if (!isName(name)) {
    const head = (trimmed.split("(")[0] ?? "").trim();
    if (isName(head) || trimmed.includes(")")) {
      throw fail(`malformed parentheses in '${text}'; write a parameter as in svc.percentile(0.95)`);
    }
    throw fail(`unknown aggregation '${text}'; known: ${NAMES.join(", ")} (as svc.percentile(p))`);
  }
  const parameters = AGGREGATIONS[name].parameters.map((parameter) => parameter.name);
  if (call === null) {
    if (parameters.length > 0) {
      throw fail(`${name} needs its parameter ${parameters.join(", ")}, e.g. ${name}(0.95)`);
    }
    return { label: text, name };
  }
  if (parameters.length === 0) throw fail(`${name} takes no parameters; write '${name}'`);
  const p = (call[2] ?? "").trim();
  if (p === "") throw fail(`${name} needs p between 0 and 1, e.g. ${name}(0.95)`);
  if (!DECIMAL.test(p)) {
    throw fail(`p '${p}' is not a plain decimal number such as 0.95 (no sign, exponent or NaN)`);
  }
  if (p.length > MAX_P_LENGTH) throw fail(`p '${p}' has more than ${MAX_P_LENGTH} characters`);
  const decimals = (p.split(".")[1] ?? "").replace(/0+$/, "").length;
  if (decimals > MAX_PERCENTILE_DECIMALS) {
    throw fail(`p '${p}' has ${decimals} decimal places; at most ${MAX_PERCENTILE_DECIMALS} are supported`);
  }
  if (!atMostOne(p)) throw fail(`p '${p}' is above 1; p is a fraction between 0 and 1, e.g. 0.95`);
  return { label: text, name, p };
}
