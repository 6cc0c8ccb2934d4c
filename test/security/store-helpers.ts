/**
 * In-process requests to a hub for the store attack tests: a JSON call answering status, body and
 * Retry-After, and the entity names the hub lists.
 */
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";

export interface HubAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly retryAfter: string | string[] | undefined;
}

/** Calls on the hub `http()` returns (read at each call, so a test may start its hub later). */
export function hubCalls(http: () => FastifyInstance): {
  call(method: "GET" | "POST", url: string, payload?: unknown): Promise<HubAnswer>;
  names(): Promise<(string | undefined)[]>;
} {
  const call = async (method: "GET" | "POST", url: string, payload?: unknown): Promise<HubAnswer> => {
    const r = await http().inject({
      method,
      url,
      headers: { "content-type": "application/json" },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    });
    return {
      status: r.statusCode,
      body: r.json() as Record<string, unknown>,
      retryAfter: r.headers["retry-after"],
    };
  };
  const names = async () => {
    const r = await call("GET", "/v0/entities");
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return (r.body as unknown as { attributes: Record<string, string> }[]).map(
      (e) => e.attributes["svc.name"],
    );
  };
  return { call, names };
}
