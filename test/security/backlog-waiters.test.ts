/**
 * Attacks on the probe's wait for room in its outgoing buffer (DESIGN 1 "Hand-offs", docs/decisions.md
 * "Process"): while the gateway takes nothing, a client sends many ingest requests at once, or a
 * few large bodies, to make the probe hold them. At most `maxWaitingRequests` requests wait, holding
 * at most `maxWaitingBytes` of bodies together (one may wait whatever its size when none does); every
 * other request gets the 503 at once, naming the bound of the outgoing buffer, and changes nothing.
 * When room returns, the waiting requests are taken and nothing is left held.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildGateway } from "../../src/gateway/app.js";
import { buildProbe, type Probe, type ProbeLinkTuning } from "../../src/probe/app.js";
import { parseExposition } from "../helpers/prometheus-text.js";
import { eventually, FakePublisher } from "../link/helpers.js";

const setup = parseSetup(`
gateway: { name: GW, port: 0 }
probes:
  - { name: p1, restApiHttpPort: 0, managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api }] }] }
`);
const DV = "/v1/managedEntity/me/sampler/s/dataview/dv";
const logger = pino({ level: "silent" });

const stops: (() => Promise<void>)[] = [];
after(async () => {
  for (const stop of stops.reverse()) await stop();
});

interface Answer {
  readonly status: number;
  readonly body: string;
}

/** A probe linked in process to a gateway whose publisher is not ready: its buffer is full. */
async function fullProbe(tuning: ProbeLinkTuning): Promise<{
  probe: Probe;
  publisher: FakePublisher;
  put(path: string, body: string): Promise<Answer>;
}> {
  const publisher = new FakePublisher();
  const gateway = buildGateway({ setup, publisher, logger, linkTuning: { creditBatches: 1 } });
  stops.push(() => gateway.stop(1000));
  const probe = buildProbe({
    name: "p1",
    link: gateway.connectInProcess(),
    logger,
    setup: setup.probes[0] as NonNullable<(typeof setup.probes)[0]>,
    linkTuning: { maxOutgoingChanges: 1, backlogWaitMs: 60_000, ...tuning },
  });
  stops.push(() => probe.stop(1000));
  await probe.start();
  const put = async (path: string, body: string): Promise<Answer> => {
    const response = await probe.http.inject({ method: "PUT", url: path, payload: body });
    return { status: response.statusCode, body: response.body };
  };
  await eventually(() => probe.linkStatus().state === "up", "the link");
  assert.equal((await put(DV, JSON.stringify([{ n: "a", v: 0 }]))).status, 200);
  await eventually(() => probe.linkStatus().outgoing === 0, "the dataview to be sent");
  publisher.setReady(false);
  for (let i = 1; probe.linkStatus().outgoing < 1; i += 1) {
    assert.equal((await put(`${DV}/row/a`, JSON.stringify({ v: i }))).status, 200);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return { probe, publisher, put };
}

const refusedForBacklog = (answer: Answer): boolean =>
  answer.status === 503 && /at its limit of 1 changes;/.test(answer.body);

test("beyond maxWaitingRequests a request is refused at once; the waiting ones are taken later", async () => {
  const { probe, publisher, put } = await fullProbe({ maxWaitingRequests: 3 });
  const answers: (Answer | undefined)[] = Array.from({ length: 10 }, () => undefined);
  const sent = answers.map((_, i) =>
    put(`${DV}/row/a`, JSON.stringify({ v: 100 + i })).then((answer) => {
      answers[i] = answer;
      return answer;
    }),
  );
  await eventually(() => answers.filter((a) => a !== undefined).length === 7, "seven refusals");
  assert.ok(
    answers.every((a) => a === undefined || refusedForBacklog(a)),
    "each refusal names the bound",
  );
  assert.equal(probe.linkStatus().waitingRequests, 3);
  assert.equal(probe.linkStatus().outgoing, 1, "a refused request changed nothing");
  const scrape = await probe.http.inject({ method: "GET", url: "/metrics" });
  assert.equal(parseExposition(scrape.body).value("vigil_probe_ingest_waiting_requests"), 3);
  // The seven refused at once never waited: only the three that wait are counted.
  assert.equal(parseExposition(scrape.body).value("vigil_probe_ingest_waited_requests_total"), 3);

  publisher.setReady(true);
  const all = await Promise.all(sent);
  assert.equal(all.filter((a) => a.status === 200).length, 3);
  await eventually(() => probe.linkStatus().outgoing === 0, "the backlog to drain");
  assert.equal(probe.linkStatus().waitingRequests, 0);
  assert.equal(probe.linkStatus().waitingBytes, 0);
  assert.equal(probe.linkStatus().waitedRequests, 3, "the counter keeps the waits that ended");
});

test("waiting bodies are bounded by their bytes together; one may wait whatever its size when none does", async () => {
  const { probe, publisher, put } = await fullProbe({ maxWaitingBytes: 1000 });
  const body = (i: number): string => JSON.stringify({ v: `${i}`.padEnd(390, "x") }); // ~400 bytes
  // One body larger than the bound waits alone...
  const large = put(`${DV}/row/big`, JSON.stringify({ v: "y".repeat(5000) }));
  await eventually(() => probe.linkStatus().waitingRequests === 1, "the large body to wait");
  assert.ok(probe.linkStatus().waitingBytes > 1000);
  // ...and then nothing else fits beside it.
  const refused = await put(`${DV}/row/a`, body(1));
  assert.ok(refusedForBacklog(refused), refused.body);
  publisher.setReady(true);
  assert.equal((await large).status, 200);
  await eventually(() => probe.linkStatus().outgoing === 0, "the backlog to drain");

  // Small bodies: as many wait as their bytes allow together (two of ~400 within 1000).
  publisher.setReady(false);
  for (let i = 1; probe.linkStatus().outgoing < 1; i += 1) {
    assert.equal((await put(`${DV}/row/a`, body(i))).status, 200);
    await new Promise((resolve) => setImmediate(resolve));
  }
  const first = put(`${DV}/row/a`, body(10));
  const second = put(`${DV}/row/a`, body(11));
  await eventually(() => probe.linkStatus().waitingRequests === 2, "two bodies to wait");
  const third = await put(`${DV}/row/a`, body(12));
  assert.ok(refusedForBacklog(third), third.body);
  assert.ok(probe.linkStatus().waitingBytes <= 1000);
  publisher.setReady(true);
  assert.deepEqual([(await first).status, (await second).status], [200, 200]);
  await eventually(() => probe.linkStatus().outgoing === 0, "the backlog to drain");
  assert.equal(probe.linkStatus().waitingBytes, 0);
});
