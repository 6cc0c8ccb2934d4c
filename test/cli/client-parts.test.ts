/**
 * The parts of the client commands without a hub: the NDJSON line reader (offsets, line numbers,
 * limits), the progress renderer on a fake clock, the table, and reading the hub's error bodies.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { HubClient, hubErrorFrom, parseHubUrl } from "../../src/cli/client/hub-client.js";
import { type NdjsonLine, ndjsonLines } from "../../src/cli/client/ndjson-lines.js";
import { formatBytes, formatDuration, Progress } from "../../src/cli/client/progress.js";
import { renderTable, safeCell, TABLE_CELL_MAX_CHARS } from "../../src/cli/client/table.js";

const dir = mkdtempSync(join(tmpdir(), "vigil-client-parts-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function lines(content: Buffer | string, start = 0, first = 1, max = 1024): Promise<NdjsonLine[]> {
  const file = join(dir, `f-${Math.random().toString(36).slice(2)}.ndjson`);
  writeFileSync(file, content);
  const out: NdjsonLine[] = [];
  for await (const line of ndjsonLines(file, start, first, max)) out.push(line);
  return out;
}

describe("ndjsonLines", () => {
  test("line numbers and the offset past each line; CRLF kept; a last line without newline counts", async () => {
    assert.deepEqual(await lines('{"a":1}\n\r\n{"b":2}\r\n{"c":3}'), [
      { kind: "text", line: 1, end: 8, text: '{"a":1}' },
      { kind: "text", line: 2, end: 10, text: "\r" },
      { kind: "text", line: 3, end: 19, text: '{"b":2}\r' },
      { kind: "text", line: 4, end: 26, text: '{"c":3}' },
    ]);
  });

  test("from an offset, numbered from the given line", async () => {
    assert.deepEqual(await lines("aa\nbb\ncc\n", 3, 2), [
      { kind: "text", line: 2, end: 6, text: "bb" },
      { kind: "text", line: 3, end: 9, text: "cc" },
    ]);
  });

  test("a line across read chunks is whole; a longer one than the limit is reported, not held", async () => {
    const big = "x".repeat(200_000);
    const read = await lines(`${big}\n${"y".repeat(300_000)}\nz\n`, 0, 1, 250_000);
    assert.deepEqual(
      read.map((l) => (l.kind === "text" ? l.text.length : l.reason)),
      [200_000, "line longer than 250000 bytes", 1],
    );
    assert.deepEqual(
      read.map((l) => l.end),
      [200_001, 500_002, 500_004],
    );
  });

  test("bytes that are not UTF-8 are reported, multi-byte characters kept", async () => {
    const read = await lines(Buffer.concat([Buffer.from("é€😀\n"), Buffer.from([0xc3, 0x28, 0x0a])]));
    assert.deepEqual(read, [
      { kind: "text", line: 1, end: 10, text: "é€😀" },
      { kind: "invalid", line: 2, end: 13, reason: "not valid UTF-8" },
    ]);
  });
});

describe("Progress", () => {
  function clock(start = 1_000) {
    const c = { t: start, now: () => c.t };
    return c;
  }

  test("status: share, sizes, lines, rate and ETA from the clock", () => {
    const c = clock();
    const out: string[] = [];
    const progress = new Progress({
      totalBytes: 4 * 1024 * 1024,
      tty: false,
      write: (t) => out.push(t),
      now: c.now,
    });
    c.t += 10_000;
    progress.advance(1024 * 1024, 5_000);
    assert.deepEqual(out, ["replay: 25% 1.0 MiB/4.0 MiB, 5000 lines, 500 lines/s, ETA 30s\n"]);
  });

  test("plain lines at most every 5 s; the final state always", () => {
    const c = clock();
    const out: string[] = [];
    const progress = new Progress({ totalBytes: 100, tty: false, write: (t) => out.push(t), now: c.now });
    for (let i = 0; i < 10; i += 1) {
      c.t += 1_000;
      progress.advance(10, 1);
    }
    progress.finish();
    // Drawn at the first step, at 6 s, and the final state.
    assert.deepEqual(
      out.map((l) => l.slice(0, 12)),
      ["replay: 10% ", "replay: 60% ", "replay: 100%"],
    );
  });

  test("on a terminal: a bar redrawn in place, the line ended at the finish", () => {
    const c = clock();
    const out: string[] = [];
    const progress = new Progress({
      totalBytes: 100,
      tty: true,
      write: (t) => out.push(t),
      now: c.now,
      barWidth: 10,
    });
    c.t += 2_000;
    progress.advance(50, 5);
    c.t += 50; // too soon to redraw
    progress.advance(10, 1);
    progress.finish();
    assert.deepEqual(out, [
      "\r█████░░░░░ 50% 50 B/100 B, 5 lines, 3 lines/s, ETA 2s\u001b[K",
      "\r██████░░░░ 60% 60 B/100 B, 6 lines, 3 lines/s, ETA 1s\u001b[K",
      "\n",
    ]);
  });

  test("on a narrow terminal the line never wraps: a narrower bar, then none and the text cut", () => {
    const draw = (columns: number) => {
      const c = clock();
      const out: string[] = [];
      const progress = new Progress({
        totalBytes: 100,
        tty: true,
        write: (t) => out.push(t),
        now: c.now,
        columns,
      });
      c.t += 2_000;
      progress.advance(50, 5);
      return (out[0] ?? "").replace("\r", "").replace("\u001b[K", "");
    };
    const status = "50% 50 B/100 B, 5 lines, 3 lines/s, ETA 2s"; // 42 characters
    assert.equal(draw(200), `${"█".repeat(15)}${"░".repeat(15)} ${status}`);
    assert.equal(draw(60), `${"█".repeat(8)}${"░".repeat(8)} ${status}`);
    assert.equal(draw(50), status);
    assert.equal(draw(20), status.slice(0, 19));
  });

  test("an empty file is done; nothing read yet has no ETA", () => {
    const c = clock();
    assert.match(
      new Progress({ totalBytes: 0, tty: false, write: () => {}, now: c.now }).status(),
      /^100% .*ETA 0s$/,
    );
    c.t += 1;
    assert.match(
      new Progress({ totalBytes: 9, tty: false, write: () => {}, now: c.now }).status(),
      /ETA \?$/,
    );
  });

  test("durations and sizes", () => {
    assert.deepEqual(
      [formatDuration(7), formatDuration(125), formatDuration(3723)],
      ["7s", "2m05s", "1h02m03s"],
    );
    assert.deepEqual(
      [formatBytes(512), formatBytes(1536), formatBytes(3 * 1024 ** 3)],
      ["512 B", "1.5 KiB", "3.0 GiB"],
    );
  });
});

describe("renderTable", () => {
  test("columns padded, numbers right-aligned, unsafe characters escaped, long cells cut", () => {
    assert.equal(
      renderTable(
        ["name", "n"],
        [
          ["a", "5"],
          ["long name", "12.5"],
        ],
      ),
      "name       n\n---------  ----\na             5\nlong name  12.5",
    );
    assert.equal(safeCell("a\u001b[2Jb\u202ec\u0085"), "a\\u001b[2Jb\\u202ec\\u0085");
    const cut = safeCell("é".repeat(200));
    assert.equal([...cut].length, TABLE_CELL_MAX_CHARS);
    assert.ok(cut.endsWith("…"));
  });
});

describe("the hub's answers", () => {
  test("errors: {title, body}, the OAuth shape, anything else shown as text; Retry-After kept", () => {
    const house = hubErrorFrom(400, JSON.stringify({ status: 400, title: "Bad request", body: "why" }), "3");
    assert.equal(house.message, "hub answered 400 Bad request: why");
    assert.equal(house.retryAfterSeconds, 3);
    const oauth = hubErrorFrom(
      401,
      JSON.stringify({ error: "invalid_client", error_description: "no" }),
      null,
    );
    assert.equal(oauth.message, "hub answered 401 invalid_client: no");
    assert.equal(
      hubErrorFrom(502, "<html>bad gateway</html>", null).message,
      "hub answered 502 unexpected answer: <html>bad gateway</html>",
    );
    assert.equal(hubErrorFrom(502, "", null).message, "hub answered 502 unexpected answer: (no body)");
  });

  test("hub URLs: http(s) only, no credentials or query; trailing slash dropped", () => {
    assert.equal(parseHubUrl("http://127.0.0.1:8081/"), "http://127.0.0.1:8081");
    assert.equal(parseHubUrl("https://hub.example/prefix/"), "https://hub.example/prefix");
    assert.throws(() => parseHubUrl("hub:8081"), /must start with http/);
    assert.throws(() => parseHubUrl("nope"), /is not a URL/);
    assert.throws(() => parseHubUrl("http://u:p@h/"), /must not hold credentials/);
    assert.throws(() => parseHubUrl("http://h/?a=1"), /must not have a query/);
  });

  test("an unreachable hub is a HubError with status 0 and the reason", async () => {
    // A port that was free a moment ago: nothing listens there.
    const server = createServer().listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const url = `http://127.0.0.1:${port}`;
    const client = new HubClient({ url, credentials: { kind: "none" } });
    await assert.rejects(client.request("GET", "/v0/ping"), {
      name: "HubError",
      message: `cannot reach the hub at ${url}: ECONNREFUSED`,
    });
  });
});
