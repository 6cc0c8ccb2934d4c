/**
 * What the fuzz tests of test/fuzz/ share: one request sent byte for byte over a real socket (no
 * URL normalisation, any header, any body), and the invariant of every hostile request:
 * an answer below 500 and, for a 4xx, exactly the documented error body `{status, title, body}`
 * (docs/errors.md, src/errors/catalog.ts) with the answer's status.
 */
import assert from "node:assert/strict";
import { Agent, request } from "node:http";

export interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

export interface Sent {
  readonly method: string;
  /** Sent as written: percent-escapes, dots and odd bytes included. */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
}

/** Keep-alive sockets reused across runs, as a real client would; closed by {@link closeAgent}. */
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** Closes the sockets the fuzz requests kept alive (call it from `after()`). */
export function closeAgent(): void {
  agent.destroy();
}

/**
 * One request to `base` (`http://host:port`); resolves with the whole answer. A request that went
 * out on a kept-alive socket the server had just closed (its keep-alive timeout) fails with
 * ECONNRESET before any answer; it is sent once more on a new socket, as Node's documentation
 * advises (`request.reusedSocket`): the server closed that socket without answering on it.
 */
export async function send(base: string, sent: Sent): Promise<Answer> {
  try {
    return await sendOnce(base, sent);
  } catch (error) {
    if ((error as { reusedSocket?: boolean }).reusedSocket !== true) throw error;
    return sendOnce(base, sent);
  }
}

function sendOnce(base: string, sent: Sent): Promise<Answer> {
  const { hostname, port } = new URL(base);
  let answered = false;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: hostname,
        port: Number(port),
        method: sent.method,
        path: sent.path,
        headers: {
          ...(sent.body === undefined ? {} : { "content-length": String(Buffer.byteLength(sent.body)) }),
          ...sent.headers,
        },
      },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers["content-type"] ?? ""),
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", (error: NodeJS.ErrnoException) => {
      // Only a reset of a reused socket before any answer is retried (see send).
      const stale = req.reusedSocket && error.code === "ECONNRESET" && !answered;
      reject(Object.assign(error, { reusedSocket: stale }));
    });
    if (sent.body !== undefined) req.write(sent.body);
    req.end();
  });
}

/** A path segment percent-encoded like a well-behaved client would send it. */
export const segment = (text: string): string => encodeURIComponent(text);

/** Describes a request for an assertion message (bodies cut to keep the message short). */
export function describeSent(sent: Sent): string {
  const body = sent.body === undefined ? "" : String(sent.body);
  return `${sent.method} ${sent.path} ${JSON.stringify(sent.headers ?? {})} ${JSON.stringify(body.slice(0, 300))}`;
}

/**
 * The fuzz invariant: no 5xx; a 4xx carries exactly `{status, title, body}` as JSON with the
 * answer's status. Returns the answer's status.
 */
export function assertNoServerError(answer: Answer, sent: Sent): number {
  const what = `${describeSent(sent)} → ${answer.status} ${answer.text.slice(0, 500)}`;
  assert.ok(answer.status >= 200 && answer.status < 500, what);
  if (answer.status >= 400) {
    assert.match(answer.contentType, /^application\/json/, what);
    const error = JSON.parse(answer.text) as Record<string, unknown>;
    assert.deepEqual(Object.keys(error).sort(), ["body", "status", "title"], what);
    assert.equal(error.status, answer.status, what);
    assert.equal(typeof error.title, "string", what);
    assert.equal(typeof error.body, "string", what);
  }
  return answer.status;
}

/** Sends `sent` and asserts the fuzz invariant; resolves with the answer. */
export async function sendHostile(base: string, sent: Sent): Promise<Answer> {
  const answer = await send(base, sent);
  assertNoServerError(answer, sent);
  return answer;
}
