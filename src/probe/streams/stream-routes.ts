/**
 * The stream endpoints of the probe (seed B, DESIGN 3.1, 3.4):
 * `PUT /v1/managedEntity/<me>/sampler/<sampler>[(<type>)]/stream/<stream>` takes the body, of any
 * content type or none, as one message, byte for byte; `GET` on that path answers the stream's
 * counters; every other method is a 405 with `Allow`.
 *
 * The probe reads every body raw (a catch-all content-type parser), but Fastify refuses a
 * `Content-Type` header it cannot parse (`""`, `weird`) with a 415 before any parser runs. A stream
 * takes any content, so on the stream path such a header is set aside before Fastify looks at it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { VigilError } from "../../errors/catalog.js";
import { type OnRequestHook, resource } from "../../http/routes.js";
import type { SamplerRegistry, SamplerState } from "../sampler-registry.js";
import type { ProbeStreams } from "./probe-streams.js";
import type { StreamCounters } from "./stream-buffer.js";

/** Route of one stream; the sampler segment may be `name(type)`. */
export const STREAM_PATH = "/v1/managedEntity/:me/sampler/:sampler/stream/:stream";

/** What the stream routes need from the probe. */
export interface StreamRouteDeps {
  readonly registry: SamplerRegistry;
  readonly streams: ProbeStreams;
  /**
   * The probe's admission of a write (memory protection, then room in the link's buffer), wrapped
   * around the PUT handler so a refused request changes nothing.
   */
  readonly ingest: (
    handler: (request: FastifyRequest, reply: FastifyReply) => unknown,
  ) => (request: FastifyRequest, reply: FastifyReply) => unknown;
  /** Refuses a name of the path beyond `limits.nameBytes` (ingest-limits.ts). */
  readonly checkNames: (params: StreamParams) => void;
}

interface StreamParams {
  me: string;
  sampler: string;
  stream: string;
}

/** What a PUT stream answers: the stream's counters after the message was taken. */
export type StreamPutResult = StreamCounters;

/** Registers the stream endpoints on the probe's HTTP app. */
export function registerStreamRoutes(app: FastifyInstance, deps: StreamRouteDeps): void {
  const { registry, streams } = deps;

  // Any content type is a stream's content type (even none, or one Fastify cannot parse). A hook of
  // the stream routes alone: the probe's other routes do not pay for it.
  const anyContentType: OnRequestHook = (request, _reply, done) => {
    if (request.headers["content-type"] !== undefined)
      request.headers["content-type"] = "application/octet-stream";
    done();
  };

  const target = (request: FastifyRequest) => {
    const params = request.params as StreamParams;
    deps.checkNames(params);
    if (params.stream === "") {
      throw new VigilError("BAD_REQUEST", {
        detail:
          "The stream name in the path is empty; write …/stream/<name> with a name of at least one character.",
      });
    }
    return { sampler: registry.resolve(params.me, params.sampler), stream: params.stream };
  };

  resource(
    app,
    STREAM_PATH,
    {
      GET: async (request) => {
        const { sampler, stream } = target(request);
        return streams.stream(sampler, stream);
      },
      PUT: deps.ingest((request): StreamPutResult => {
        const { sampler, stream } = target(request);
        const body = request.body;
        return streams.put(sampler, stream, Buffer.isBuffer(body) ? body : Buffer.alloc(0));
      }),
    },
    { onRequest: anyContentType },
  );
}

/**
 * The streams part of GET on a rest-api sampler (DESIGN 3.1: "its sampling info, dataviews and
 * streams, the Streams Dataview's counters included"): the stream names in creation order, and the
 * Streams Dataview's headlines and rows, or null before the sampler's first stream.
 */
export function samplerStreamsPart(
  streams: ProbeStreams,
  sampler: SamplerState,
): {
  streams: string[];
  streamsDataview: {
    headlines: { samplingStatus: string; totalStreams: number };
    rows: StreamCounters[];
  } | null;
} {
  const view = streams.streamsView(sampler);
  if (view === undefined) return { streams: [], streamsDataview: null };
  return {
    streams: view.streams.map((s) => s.name),
    streamsDataview: {
      headlines: { samplingStatus: view.samplingStatus, totalStreams: view.totalStreams },
      rows: [...view.streams],
    },
  };
}
