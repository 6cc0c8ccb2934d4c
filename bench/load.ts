/**
 * A bounded HTTP load loop for benchmarks: `concurrency` keep-alive requests in flight against
 * 127.0.0.1 only, for at most `seconds` and at most `maxRequests`. Returns requests per second.
 */
import { Agent, request } from "node:http";

export interface LoadResult {
  readonly requests: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly failures: number;
}

export async function load(
  url: string,
  body: Buffer,
  options: { seconds: number; concurrency: number; maxRequests: number },
): Promise<LoadResult> {
  const target = new URL(url);
  if (target.hostname !== "127.0.0.1") throw new Error("benchmarks target 127.0.0.1 only");
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency });
  const deadline = performance.now() + options.seconds * 1000;
  let sent = 0;
  let failures = 0;
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const req = request(
        { agent, host: target.hostname, port: target.port, path: target.pathname, method: "PUT" },
        (res) => {
          if (res.statusCode !== 200) failures += 1;
          res.resume();
          res.on("end", resolve);
        },
      );
      req.on("error", () => {
        failures += 1;
        resolve();
      });
      req.end(body);
    });
  const worker = async () => {
    while (performance.now() < deadline && sent < options.maxRequests) {
      sent += 1;
      await one();
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return { requests: sent, seconds, perSecond: sent / seconds, failures };
}
