/**
 * `vigil replay` (DESIGN 1) against a real hub over real HTTP: batches, the resume offset, replaying
 * twice stores nothing twice (checked by querying the hub), rejected lines by number and reason,
 * the exit status, and the application key. Progress is driven by a fake clock, never by waiting.
 */
import assert from "node:assert/strict";
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { HubClient } from "../../src/cli/client/hub-client.js";
import { REPLAY_STATE_SUFFIX } from "../../src/cli/client/replay-state.js";
import {
  REPLAY_ATTEMPTS,
  REPLAY_EXIT_REJECTED,
  replayFile,
  replaySummary,
} from "../../src/cli/commands/replay.js";
import {
  CLIENT_ID,
  CLIENT_SECRET,
  countSamples,
  entityMessage,
  probeMessage,
  type RunningHub,
  rowMessage,
  runCli,
  startHub,
  T0,
} from "./cli-fixture.js";

const dir = mkdtempSync(join(tmpdir(), "vigil-replay-"));
let open: RunningHub;
let secured: RunningHub;
before(async () => {
  [open, secured] = await Promise.all([startHub(false), startHub(true)]);
});
after(async () => {
  await Promise.all([open.stop(), secured.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

const ndjson = (messages: readonly unknown[]) => messages.map((m) => `${JSON.stringify(m)}\n`).join("");

/** `count` row updates for entity `me`, one second apart. */
function rows(me: string, count: number, from = 0): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) =>
    rowMessage(me, `r${(from + i) % 3}`, String(from + i), T0 + (from + i) * 1000),
  );
}

/** A clock that moves 10 s per reading, so every progress step is drawn. */
function steppingClock(): () => number {
  let t = 0;
  return () => {
    t += 10_000;
    return t;
  };
}

function quiet() {
  const out: string[] = [];
  return { out, progress: { tty: false, write: (text: string) => out.push(text) } };
}

describe("vigil replay", () => {
  test("stores every line in bounded batches, saves the offset, and a second replay stores nothing twice", async () => {
    const file = join(dir, "first.ndjson");
    writeFileSync(file, ndjson([probeMessage, entityMessage("rp-a", {}), ...rows("rp-a", 25)]));
    const client = new HubClient({ url: open.url, credentials: { kind: "none" } });
    const { out, progress } = quiet();
    const result = await replayFile(client, { file, progress, batchLines: 4, now: steppingClock() });
    assert.deepEqual(
      { ...result.state, rejectedLines: result.state.rejectedLines.length },
      { offset: statSync(file).size, lines: 27, accepted: 27, duplicates: 0, rejected: 0, rejectedLines: 0 },
    );
    assert.equal(await countSamples(open.url, "rp-a"), 25);
    // 27 lines in batches of 4: 7 requests, each acknowledged batch drawn, then the final line.
    assert.equal(out.length, 8, out.join(""));
    assert.match(out.at(-1) ?? "", /^replay: 100% .* 27 lines, \d+ lines\/s, ETA 0s\n$/);
    const saved = JSON.parse(readFileSync(file + REPLAY_STATE_SUFFIX, "utf8")) as { offset: number };
    assert.equal(saved.offset, statSync(file).size);

    const again = await replayFile(client, { file, restart: true, progress: quiet().progress });
    assert.equal(again.state.accepted, 27);
    assert.equal(again.state.duplicates, 27, "the hub de-duplicates a replayed line");
    assert.equal(await countSamples(open.url, "rp-a"), 25, "nothing stored twice");
    assert.match(
      replaySummary(file, again),
      /27 lines; 0 messages stored, 27 already stored, 0 lines rejected/,
    );
  });

  test("resumes after the last acknowledged batch, and picks up lines appended since", async () => {
    const file = join(dir, "resume.ndjson");
    writeFileSync(file, ndjson([entityMessage("rp-b", {}), ...rows("rp-b", 9)]));
    const client = new HubClient({ url: open.url, credentials: { kind: "none" } });
    // The process "dies" right after the first batch is acknowledged and its offset saved.
    let crashed = false;
    const crashing = {
      tty: false,
      write: () => {
        if (!crashed) {
          crashed = true;
          throw new Error("killed");
        }
      },
    };
    await assert.rejects(
      replayFile(client, { file, progress: crashing, batchLines: 4, now: steppingClock() }),
      /killed \(lines 1–4 are done; the same command resumes after line 4\)/,
    );
    assert.equal(await countSamples(open.url, "rp-b"), 3);

    const resumed = await replayFile(client, { file, progress: quiet().progress, batchLines: 4 });
    assert.equal(resumed.resumedAfter, 4);
    assert.equal(resumed.state.lines, 10);
    assert.equal(resumed.state.duplicates, 0, "only lines after the offset were sent");
    assert.equal(await countSamples(open.url, "rp-b"), 9);

    appendFileSync(file, ndjson(rows("rp-b", 2, 9)));
    const grown = await replayFile(client, { file, progress: quiet().progress });
    assert.deepEqual([grown.resumedAfter, grown.state.lines, grown.state.duplicates], [10, 12, 0]);
    assert.equal(await countSamples(open.url, "rp-b"), 11);
  });

  test("a state file that no longer fits the input is refused, and --restart ignores it", async () => {
    const file = join(dir, "replaced.ndjson");
    writeFileSync(file, ndjson([entityMessage("rp-c", {}), ...rows("rp-c", 3)]));
    writeFileSync(
      file + REPLAY_STATE_SUFFIX,
      JSON.stringify({ offset: 10, lines: 1, accepted: 1, duplicates: 0, rejected: 0, rejectedLines: [] }),
    );
    const client = new HubClient({ url: open.url, credentials: { kind: "none" } });
    await assert.rejects(
      replayFile(client, { file, progress: quiet().progress }),
      /changed since .* --restart/,
    );
    const result = await replayFile(client, { file, restart: true, progress: quiet().progress });
    assert.equal(result.state.accepted, 4);
    writeFileSync(file + REPLAY_STATE_SUFFIX, "{");
    await assert.rejects(replayFile(client, { file, progress: quiet().progress }), /not a replay state file/);
  });

  test("rejected lines are listed by number with the hub's reason, and the exit status is 2", async () => {
    const file = join(dir, "bad.ndjson");
    const good = ndjson([entityMessage("rp-d", {}), ...rows("rp-d", 2)]);
    const lines = [
      good.trimEnd(), // lines 1–3
      "", // 4: blank, skipped
      "{not json", // 5
      JSON.stringify({ type: "table", operation: "update", data: {} }), // 6: not a valid message
      "[1, 2]", // 7: an array
      JSON.stringify(rowMessage("rp-d", "r9", "7", T0 + 60_000)), // 8
    ];
    writeFileSync(
      file,
      Buffer.concat([Buffer.from(`${lines.join("\n")}\n`), Buffer.from([0xff, 0xfe, 0x0a])]),
    ); // 9: not UTF-8
    const result = await runCli(["replay", file, "--hub", open.url]);
    assert.equal(result.status, REPLAY_EXIT_REJECTED, result.stderr);
    assert.match(result.stdout, /9 lines; 4 messages stored, 0 already stored, 4 lines rejected/);
    const listed = result.stdout.split("\n").filter((l) => l.startsWith("  line "));
    assert.deepEqual(
      listed.map((l) => /^ {2}line (\d+):/.exec(l)?.[1]),
      ["5", "6", "7", "9"],
      result.stdout,
    );
    assert.match(listed[0] ?? "", /not valid JSON/);
    assert.match(listed[2] ?? "", /a JSON array/);
    assert.match(listed[3] ?? "", /not valid UTF-8/);
    assert.match(result.stderr, /^replay: 100% /m, "plain progress lines when stderr is not a terminal");
    assert.equal(await countSamples(open.url, "rp-d"), 3);

    // A resumed run at the end still reports the earlier rejections and still exits 2.
    const again = await runCli(["replay", file, "--hub", open.url]);
    assert.equal(again.status, REPLAY_EXIT_REJECTED);
    assert.match(again.stdout, /resumed after line 9/);
  });

  test("a line longer than the limit is rejected without being held", async () => {
    const file = join(dir, "long.ndjson");
    const long = JSON.stringify(rowMessage("rp-e", "r", "x".repeat(5000), T0));
    writeFileSync(file, `${ndjson([entityMessage("rp-e", {})])}${long}\n${ndjson(rows("rp-e", 1))}`);
    const client = new HubClient({ url: open.url, credentials: { kind: "none" } });
    const result = await replayFile(client, { file, progress: quiet().progress, maxLineBytes: 1000 });
    assert.deepEqual(result.state.rejectedLines, [{ line: 2, error: "line longer than 1000 bytes" }]);
    assert.equal(result.state.accepted, 2);
  });

  test("with an application key against a secured hub; a bad token is the hub's 401 text and exit 1", async () => {
    const file = join(dir, "secured.ndjson");
    writeFileSync(file, ndjson([entityMessage("rp-f", {}), ...rows("rp-f", 5)]));
    const ok = await runCli(["replay", file, "--hub", secured.url], {
      VIGIL_CLIENT_ID: CLIENT_ID,
      VIGIL_CLIENT_SECRET: CLIENT_SECRET,
    });
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /6 lines; 6 messages stored/);

    const bad = await runCli(["replay", file, "--restart", "--hub", secured.url, "--token", "nope"]);
    assert.equal(bad.status, 1);
    assert.match(
      bad.stderr,
      /vigil: hub answered 401 Authorization failed: A valid authorization token is needed/,
    );
    assert.match(bad.stderr, /nothing was acknowledged yet/);
    assert.doesNotMatch(bad.stderr, /at .*\.ts:\d+/, "no stack trace");
    assert.ok(existsSync(file + REPLAY_STATE_SUFFIX), "the earlier state is kept");
  });

  test("a busy or rate-limiting hub gets the batch again after Retry-After or a back-off, up to a limit", async () => {
    // The real hub answers 503 only while other backfills run, which a test cannot hold still; this
    // stand-in answers 503 and 429 as the hub does, then takes the batch.
    const answers: { status: number; headers: Record<string, string>; body: string }[] = [
      {
        status: 503,
        headers: { "retry-after": "7" },
        body: '{"status":503,"title":"Service unavailable","body":"busy"}',
      },
      { status: 429, headers: {}, body: '{"status":429,"title":"Too many requests","body":"slow down"}' },
      { status: 200, headers: {}, body: '{"accepted":1,"duplicates":0,"rejected":[]}' },
    ];
    let requests = 0;
    const server = createServer((request, response) => {
      request.resume();
      const answer = answers[Math.min(requests, answers.length - 1)] ?? answers[0];
      requests += 1;
      response.writeHead(answer?.status ?? 500, { "content-type": "application/json", ...answer?.headers });
      response.end(answer?.body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const file = join(dir, "busy.ndjson");
      writeFileSync(file, ndjson([entityMessage("rp-g", {})]));
      const waits: number[] = [];
      const sleep = async (ms: number) => {
        waits.push(ms);
      };
      const client = new HubClient({ url, credentials: { kind: "none" } });
      const result = await replayFile(client, { file, restart: true, progress: quiet().progress, sleep });
      assert.equal(result.state.accepted, 1);
      assert.deepEqual(waits, [7_000, 2_000], "Retry-After first, then the back-off of the second attempt");

      answers.splice(0, answers.length, answers[0] as (typeof answers)[number]);
      requests = 0;
      waits.length = 0;
      await assert.rejects(
        replayFile(client, { file, restart: true, progress: quiet().progress, sleep }),
        /hub answered 503 Service unavailable: busy \(nothing was acknowledged yet\)/,
      );
      assert.equal(requests, REPLAY_ATTEMPTS);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
