/**
 * Reading the setup's YAML text (DESIGN 2) while keeping the positions: the data goes to the
 * checks, and each issue they find is placed back on the line and column of the key or value it
 * names, so `vigil validate` can say "(line 3, column 3)".
 */
import {
  type Document,
  isAlias,
  isMap,
  isNode,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  visit,
} from "yaml";
import { formatPath, type RawIssue, type Segment, SetupError, type SetupIssue } from "./setup-issues.js";

/** The YAML as data, with a way back from a path in the data to a place in the text. */
export interface SetupYaml {
  /** The document as plain data: mappings are objects, sequences arrays; null for an empty document. */
  readonly data: unknown;
  /** The issue with its path prefixed (`setup.yaml:probes[0].name`) and its line and column, when found. */
  locate(issue: RawIssue): SetupIssue;
}

/**
 * Parses YAML text into data and a locator. Duplicate keys are errors (`uniqueKeys`), and the yaml
 * library's default alias limit refuses "billion laughs" documents. `source` (a file name), when
 * given, prefixes every issue path (`setup.yaml:gateway.prot`, or just `setup.yaml` for the whole
 * file). Throws a `SetupError` listing every syntax error with its line and column, or the reason
 * the document cannot be turned into data.
 */
export function readSetupYaml(yamlText: string, source?: string): SetupYaml {
  const prefix = (inner: string): string =>
    source === undefined ? inner : inner ? `${source}:${inner}` : source;
  const lineCounter = new LineCounter();
  const doc = parseDocument(yamlText, { lineCounter, prettyErrors: false, uniqueKeys: true });

  if (doc.errors.length > 0) {
    throw new SetupError(
      doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        return {
          path: prefix(""),
          message: `YAML syntax error at line ${line}, column ${col}: ${error.message}`,
          line,
          column: col,
        };
      }),
    );
  }

  // A key that is a list, a mapping or binary data (`? [a, b]: x`, `!!binary aGk=: x`) has no place
  // in a setup, and as data it would become its YAML text (with a process warning from `yaml`):
  // refused here, where it is.
  const keys: SetupIssue[] = [];
  visit(doc, {
    Pair(_, pair) {
      const key = isAlias(pair.key) ? pair.key.resolve(doc) : pair.key;
      if (!isNode(key) || (isScalar(key) && (key.value === null || typeof key.value !== "object"))) return;
      const at = rangeStart(pair.key);
      const { line, col } = lineCounter.linePos(at ?? 0);
      keys.push({
        path: prefix(""),
        message: `a key at line ${line}, column ${col} is a list, a mapping or binary data; keys are names`,
        ...(at === undefined ? {} : { line, column: col }),
      });
    },
  });
  if (keys.length > 0) throw new SetupError(keys);

  let data: unknown;
  try {
    data = doc.toJS(); // the default alias limit guards against "billion laughs" documents
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new SetupError([{ path: prefix(""), message: `the YAML cannot be read: ${reason}` }], { cause });
  }
  // An alias inside the node it names (`probes: &p [{managedEntities: *p}]`) makes the data cyclic,
  // and every check after this walks the data recursively (found by test/fuzz/setup-file-fuzz.test.ts:
  // a RangeError instead of a SetupError).
  const cycle = cyclePath(data, new Set(), []);
  if (cycle !== undefined) {
    throw new SetupError([
      {
        path: prefix(formatPath(cycle)),
        message: "this alias refers to a node that contains it, so its value never ends; write the value out",
      },
    ]);
  }

  return {
    data,
    locate(issue) {
      const offset = offsetOf(doc, issue.segments, issue.atKey === true);
      const base = { path: prefix(formatPath(issue.segments)), message: issue.message };
      if (offset === undefined) return base;
      const { line, col } = lineCounter.linePos(offset);
      return { ...base, line, column: col };
    },
  };
}

/**
 * The path of the first value that contains itself (through aliases), if any. A value shared by
 * several aliases is searched once (`done`), so the walk stays linear in the document's nodes.
 */
function cyclePath(
  value: unknown,
  ancestors: Set<object>,
  path: Segment[],
  done = new Set<object>(),
): Segment[] | undefined {
  if (typeof value !== "object" || value === null || done.has(value)) return undefined;
  if (ancestors.has(value)) return path;
  ancestors.add(value);
  const entries: [Segment, unknown][] = Array.isArray(value) ? [...value.entries()] : Object.entries(value);
  for (const [key, child] of entries) {
    path.push(key);
    const found = cyclePath(child, ancestors, path, done);
    if (found !== undefined) return found;
    path.pop();
  }
  ancestors.delete(value);
  done.add(value);
  return undefined;
}

/** Offset in the YAML text of the deepest node on `segments` (the key itself when `atKey`). */
function offsetOf(doc: Document, segments: readonly Segment[], atKey: boolean): number | undefined {
  let node: unknown = doc.contents;
  let offset = rangeStart(node);
  for (const [i, segment] of segments.entries()) {
    if (isAlias(node)) node = node.resolve(doc);
    if (isMap(node)) {
      const pair = node.items.find((p) => String(isScalar(p.key) ? p.key.value : p.key) === String(segment));
      if (pair === undefined) return offset;
      const last = i === segments.length - 1;
      const keyOffset = rangeStart(pair.key);
      if (last && atKey) return keyOffset ?? offset;
      node = pair.value;
      offset = rangeStart(node) ?? keyOffset ?? offset;
    } else if (isSeq(node) && typeof segment === "number") {
      node = node.items[segment];
      offset = rangeStart(node) ?? offset;
    } else {
      return offset;
    }
  }
  return offset;
}

function rangeStart(node: unknown): number | undefined {
  return isNode(node) ? node.range?.[0] : undefined;
}
