/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4) for the self-metrics
 * tests: every sample line must parse, belong to a family declared by a `# TYPE` line
 * before it, and histograms must be consistent (cumulative buckets, `+Inf` bucket = `_count`).
 * Throws with the offending line otherwise.
 */
import assert from "node:assert/strict";

export interface Series {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  /** Family name → its type (`counter`, `gauge`, `histogram`, …). */
  readonly types: ReadonlyMap<string, string>;
  readonly series: readonly Series[];
  /** The series named `name` whose labels include `labels`. */
  find(name: string, labels?: Readonly<Record<string, string>>): Series[];
  /** The sum of the values of {@link find}; 0 when there is none. */
  value(name: string, labels?: Readonly<Record<string, string>>): number;
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})?\\s+(\\S+)(?:\\s+-?\\d+)?$`);
const TYPE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const HELP = new RegExp(`^# HELP (${NAME}) .*$`);
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

/** Label pairs `a="x",b="y\"z"`, with the format's escapes (`\\`, `\"`, `\n`). */
function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const name = /^([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(text.slice(i));
    assert.ok(name?.[1] !== undefined, `bad label at ${i} in: ${line}`);
    i += name[0].length;
    let value = "";
    for (;;) {
      const c = text[i];
      assert.ok(c !== undefined, `unterminated label value in: ${line}`);
      i += 1;
      if (c === '"') break;
      if (c === "\\") {
        const e = text[i];
        i += 1;
        assert.ok(e === "\\" || e === '"' || e === "n", `bad escape in: ${line}`);
        value += e === "n" ? "\n" : e;
      } else value += c;
    }
    assert.ok(!(name[1] in labels), `label ${name[1]} twice in: ${line}`);
    labels[name[1]] = value;
    if (text[i] === ",") i += 1;
  }
  return labels;
}

function parseValue(text: string, line: string): number {
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  // prom-client writes NaN as `Nan` (an empty event-loop histogram); Prometheus reads values with
  // Go's strconv.ParseFloat, which takes NaN in any case.
  if (text.toLowerCase() === "nan") return Number.NaN;
  assert.match(text, /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/, `bad value in: ${line}`);
  return Number(text);
}

/** The family a sample belongs to: `x_bucket`, `x_sum`, `x_count` of histogram `x` are `x`. */
function familyOf(name: string, types: ReadonlyMap<string, string>): string | undefined {
  if (types.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, "");
  const type = types.get(base);
  return type === "histogram" || type === "summary" ? base : undefined;
}

/** Parses and checks a scrape's text. */
export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const series: Series[] = [];
  assert.ok(text.endsWith("\n"), "the exposition ends with a line feed");
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("#")) {
      const type = TYPE.exec(line);
      if (type?.[1] !== undefined && type[2] !== undefined) {
        assert.ok(!types.has(type[1]), `TYPE of ${type[1]} twice`);
        assert.ok(TYPES.has(type[2]));
        types.set(type[1], type[2]);
      } else assert.match(line, HELP, `unknown comment line: ${line}`);
      continue;
    }
    const sample = SAMPLE.exec(line);
    assert.ok(sample?.[1] !== undefined && sample[3] !== undefined, `bad sample line: ${line}`);
    assert.ok(familyOf(sample[1], types) !== undefined, `sample before its # TYPE: ${line}`);
    series.push({
      name: sample[1],
      labels: sample[2] === undefined ? {} : parseLabels(sample[2], line),
      value: parseValue(sample[3], line),
    });
  }
  const find = (name: string, labels: Readonly<Record<string, string>> = {}) =>
    series.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  checkHistograms(types, series);
  return {
    types,
    series,
    find,
    value: (name, labels) => find(name, labels).reduce((sum, s) => sum + s.value, 0),
  };
}

/** Buckets of each histogram series are cumulative and the `+Inf` bucket equals `_count`. */
function checkHistograms(types: ReadonlyMap<string, string>, series: readonly Series[]): void {
  const groups = new Map<string, { buckets: [number, number][]; count?: number }>();
  for (const s of series) {
    const family = familyOf(s.name, types);
    if (family === undefined || types.get(family) !== "histogram") continue;
    const { le, ...rest } = s.labels;
    const key = `${family}${JSON.stringify(Object.entries(rest).sort())}`;
    const group = groups.get(key) ?? { buckets: [] };
    groups.set(key, group);
    if (s.name.endsWith("_bucket")) {
      assert.ok(le !== undefined, `bucket without le: ${s.name}`);
      group.buckets.push([parseValue(le, s.name), s.value]);
    } else if (s.name.endsWith("_count")) group.count = s.value;
  }
  for (const [key, group] of groups) {
    const sorted = [...group.buckets].sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < sorted.length; i += 1) {
      assert.ok((sorted[i]?.[1] ?? 0) >= (sorted[i - 1]?.[1] ?? 0), `buckets of ${key} are not cumulative`);
    }
    const last = sorted.at(-1);
    assert.equal(last?.[0], Number.POSITIVE_INFINITY, `${key} has a +Inf bucket`);
    assert.equal(last?.[1], group.count, `${key}: +Inf bucket = _count`);
  }
}
