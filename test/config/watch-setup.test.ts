/**
 * Configuration reload for real (DESIGN 1): a temp folder, real files, real `fs.watch` events.
 * Each step waits for the callback it expects (bounded), never for a fixed time.
 */
import assert from "node:assert/strict";
import { EventEmitter, once } from "node:events";
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadSetupFile, type SetupError } from "../../src/config/load-setup.js";
import type { Setup } from "../../src/config/setup.js";
import { type SetupWatcher, watchSetupFile } from "../../src/config/watch-setup.js";

/** Longest wait for a callback: generous, since file events on a loaded CI machine can lag. */
const WAIT_MS = 20_000;
/** Short debounce, so the test runs quickly; the behaviour does not depend on its value. */
const DEBOUNCE_MS = 20;

type Seen = { kind: "change"; setup: Setup } | { kind: "invalid"; error: SetupError };

const dirs: string[] = [];
const watchers: SetupWatcher[] = [];
after(() => {
  for (const watcher of watchers) watcher.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const setupYaml = (gateway: string, comment = ""): string => `${comment}gateway: {name: ${gateway}}\n`;

/** A watched setup file in a new temp folder, recording every callback in order. */
function watched(initialGateway: string) {
  const dir = mkdtempSync(join(tmpdir(), "vigil-watch-"));
  dirs.push(dir);
  const file = join(dir, "setup.yaml");
  writeFileSync(file, setupYaml(initialGateway));
  const seen: Seen[] = [];
  const emitter = new EventEmitter();
  const record = (event: Seen): void => {
    seen.push(event);
    emitter.emit("seen");
  };
  const watcher = watchSetupFile(file, {
    current: loadSetupFile(file),
    debounceMs: DEBOUNCE_MS,
    onChange: (setup) => record({ kind: "change", setup }),
    onInvalid: (error) => record({ kind: "invalid", error }),
  });
  watchers.push(watcher);

  /** Waits until a callback from index `from` on matches; resolves to its index. */
  async function waitFor(what: string, from: number, matches: (event: Seen) => boolean): Promise<number> {
    // A referenced timer (AbortSignal.timeout's is not): the watch itself keeps no process alive.
    const bound = new AbortController();
    const timer = setTimeout(() => bound.abort(), WAIT_MS);
    try {
      for (;;) {
        const index = seen.findIndex((event, i) => i >= from && matches(event));
        if (index >= 0) return index;
        try {
          await once(emitter, "seen", { signal: bound.signal });
        } catch {
          assert.fail(`no ${what} within ${WAIT_MS} ms; seen: ${JSON.stringify(seen.map(describeSeen))}`);
        }
      }
    } finally {
      clearTimeout(timer);
    }
  }
  const changedTo = (gateway: string) => (event: Seen) =>
    event.kind === "change" && event.setup.gateway?.name === gateway;
  const changes = (): string[] =>
    seen.flatMap((e) => (e.kind === "change" ? [e.setup.gateway?.name ?? "(hub-only)"] : []));
  return { dir, file, seen, watcher, waitFor, changedTo, changes };
}

function describeSeen(event: Seen): string {
  return event.kind === "change"
    ? `change:${event.setup.gateway?.name ?? "(hub-only)"}`
    : `invalid:${event.error.issues[0]?.message}`;
}

describe("watchSetupFile", () => {
  test("in-place edits, rename-and-replace, invalid and back, and a no-op edit", async () => {
    const { dir, file, seen, watcher, waitFor, changedTo, changes } = watched("A");

    // An edit in place (truncate + write).
    writeFileSync(file, setupYaml("B"));
    let at = await waitFor("onChange(B) after an in-place write", 0, changedTo("B"));

    // An editor's save: write a temporary file next to it, then rename it over the setup.
    const temporary = join(dir, ".setup.yaml.swp");
    writeFileSync(temporary, setupYaml("C"));
    renameSync(temporary, file);
    at = await waitFor("onChange(C) after rename-and-replace", at + 1, changedTo("C"));

    // An invalid file: onInvalid with the issue, no onChange; C stays the reference.
    writeFileSync(file, "gateway: {name: C, prot: 1}\n");
    const invalid = await waitFor("onInvalid for an unknown key", at + 1, (e) => e.kind === "invalid");
    const event = seen[invalid];
    assert.equal(event?.kind, "invalid");
    if (event?.kind === "invalid") {
      assert.deepEqual(
        event.error.issues.map((i) => [i.path, i.message]),
        [[`${file}:gateway.prot`, "unknown key 'prot'; did you mean 'port'?"]],
      );
    }
    assert.deepEqual(changes(), ["B", "C"]);

    // Back to valid, and different: onChange.
    writeFileSync(file, setupYaml("D"));
    at = await waitFor("onChange(D) after the file is valid again", invalid + 1, changedTo("D"));

    // Only a comment changes: the parsed setup is the same, so no onChange (whenever it is read).
    writeFileSync(file, setupYaml("D", "# reviewed\n"));
    assert.equal(watcher.reload(), "unchanged");
    writeFileSync(file, setupYaml("E"));
    await waitFor("onChange(E)", at + 1, changedTo("E"));
    assert.deepEqual(changes(), ["B", "C", "D", "E"]);
  });

  test("a file removed then written again: onInvalid (cannot read), then onChange", async () => {
    const { file, waitFor, changedTo, seen } = watched("A");
    unlinkSync(file);
    const gone = await waitFor("onInvalid for a missing file", 0, (e) => e.kind === "invalid");
    const event = seen[gone];
    assert.ok(event?.kind === "invalid" && /cannot read the setup file \(ENOENT/.test(event.error.message));
    writeFileSync(file, setupYaml("B"));
    await waitFor("onChange(B) once the file is back", gone + 1, changedTo("B"));
  });

  test("reload() (SIGHUP) reads at once and says what happened", async () => {
    const { file, watcher, waitFor, changedTo, changes } = watched("A");
    assert.equal(watcher.reload(), "unchanged");

    writeFileSync(file, setupYaml("B"));
    assert.equal(watcher.reload(), "changed"); // before the debounced read, which then finds nothing new
    assert.deepEqual(changes(), ["B"]);

    writeFileSync(file, "gateway: []\n");
    assert.equal(watcher.reload(), "invalid");

    // The debounced reads of these writes may still come; the last good setup stays B.
    writeFileSync(file, setupYaml("B"));
    assert.equal(watcher.reload(), "unchanged");
    writeFileSync(file, setupYaml("C"));
    await waitFor("onChange(C) from the watch", 0, changedTo("C"));
    assert.deepEqual(changes(), ["B", "C"]);

    watcher.close();
    watcher.close(); // idempotent
    writeFileSync(file, setupYaml("D"));
    assert.equal(watcher.reload(), "closed");
    assert.deepEqual(changes(), ["B", "C"]);
  });
});
