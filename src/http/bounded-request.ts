/**
 * One HTTP(S) request from one vigil process to another (the gateway fetching the hub's key set,
 * the hub relaying the console's commands to the gateway): the answer is read up to a size limit,
 * the whole exchange has a deadline, and over HTTPS the server is trusted as `trust` says
 * (pinned-certificate.ts: the certificate the setup names for it, or the public CAs).
 */
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import type { PinnedTrust } from "./pinned-certificate.js";

export interface BoundedRequest {
  readonly method: "GET" | "POST";
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Largest answer read; a longer one fails the request. */
  readonly maxBytes: number;
  /** Ends the request (with its reason) when aborted. */
  readonly signal?: AbortSignal;
  /** How an HTTPS server's certificate is checked; the public CAs when absent. */
  readonly trust?: PinnedTrust;
}

export interface BoundedAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Sends the request; resolves with the whole answer, rejects on a network, TLS, size or abort error. */
export function boundedRequest(url: URL, options: BoundedRequest): Promise<BoundedAnswer> {
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: options.method,
        headers: options.headers ?? {},
        ...(url.protocol === "https:" ? options.trust : {}),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > options.maxBytes)
            req.destroy(new Error(`the answer from ${url.host} is larger than ${options.maxBytes} bytes`));
          else chunks.push(chunk);
        });
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}
