/**
 * The probe: `rest-api` samplers that take data pushed over HTTP (seed area B, DESIGN 3).
 * `buildProbe()` returns an unstarted service (STYLE 3); the CLI starts and stops it.
 */
import os from "node:os";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { ProbeSetup } from "../config/setup.js";
import { VigilError } from "../errors/catalog.js";
import { resource } from "../http/routes.js";
import { createHttpApp, listen } from "../http/server.js";
import { asEpochMs } from "../ids.js";
import type { DataviewAddress, ProbeLink, ProbeParameters } from "../link/probe-link.js";
import { VIGIL_VERSION } from "../version.js";
import { DataviewModel } from "./dataview-model.js";
import { parseColumnOrder, parseDataviewBody, parseRowBody } from "./ingest-body.js";
import { MemoryProtection } from "./memory-protection.js";
import { SamplerRegistry, type SamplerState } from "./sampler-registry.js";

/** The seed's reserved name: no endpoint operates on it (seed B rule 7). */
export const STREAMS_DATAVIEW = "Streams Dataview";

/** Sampling info of rest-api samplers (seed B): options inactive, this status text. */
export const SAMPLING_STATUS_TEXT = "Sampling dependent on 3rd Party Application";

export interface ProbeOptions {
  readonly setup: ProbeSetup;
  /** The gateway's `customDataviewMaxRows`; > 0 replaces every sampler's rowLimit. */
  readonly customDataviewMaxRows: number;
  readonly link: ProbeLink;
  readonly logger: Logger;
}

export interface Probe {
  readonly name: string;
  /** The HTTP app, for in-process tests (`app.inject`). */
  readonly http: FastifyInstance;
  /** Listens on the setup's ports; returns the bound base URLs. */
  start(): Promise<{ http: string }>;
  /** Finishes in-flight requests, tells the gateway goodbye. */
  stop(): Promise<void>;
}

interface DataviewParams {
  me: string;
  sampler: string;
  dataview: string;
  row?: string;
}

/** Builds an unstarted probe for one probe of the setup. */
export function buildProbe(options: ProbeOptions): Probe {
  const { setup, link, logger } = options;
  const registry = new SamplerRegistry(setup);
  const memory = new MemoryProtection(() => setup.memoryProtection);
  const http = createHttpApp({ logger: logger.child({ component: "probe", probe: setup.name }) });

  // Bodies are read raw whatever the Content-Type (DESIGN 3.2: curl's default must work; streams
  // pass bytes through untouched).
  http.removeAllContentTypeParsers();
  http.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));

  const rowLimit = (sampler: SamplerState): number =>
    options.customDataviewMaxRows > 0 ? options.customDataviewMaxRows : sampler.setup.rowLimit;

  const addressOf = (sampler: SamplerState, dataview: string): DataviewAddress => ({
    managedEntity: sampler.managedEntity,
    sampler: sampler.setup.name,
    samplerType: sampler.setup.type,
    dataview,
  });

  const publish = (
    sampler: SamplerState,
    dataview: string,
    model: DataviewModel,
    touched: readonly string[],
  ) => {
    link.send({
      kind: "dataview",
      at: asEpochMs(Date.now()),
      address: addressOf(sampler, dataview),
      plugin: "rest-api",
      state: model.state(),
      touched,
    });
  };

  const target = (request: FastifyRequest): { sampler: SamplerState; params: DataviewParams } => {
    const params = request.params as DataviewParams;
    if (params.dataview === STREAMS_DATAVIEW) throw new VigilError("RESERVED_DATAVIEW");
    return { sampler: registry.resolve(params.me, params.sampler), params };
  };

  const existing = (sampler: SamplerState, dataview: string): DataviewModel => {
    const model = sampler.dataviews.get(dataview);
    if (model === undefined)
      throw new VigilError("DATAVIEW_NOT_FOUND", { sampler: sampler.setup.name, dataview });
    return model;
  };

  const ingest =
    (handler: (request: FastifyRequest, reply: FastifyReply) => unknown) =>
    async (request: FastifyRequest, reply: FastifyReply) => {
      memory.check();
      return handler(request, reply);
    };

  const dataviewPath = "/v1/managedEntity/:me/sampler/:sampler/dataview/:dataview";

  resource(http, dataviewPath, {
    GET: async (request) => {
      const { sampler, params } = target(request);
      return existing(sampler, params.dataview).state();
    },
    PUT: ingest((request) => {
      const { sampler, params } = target(request);
      const rows = parseDataviewBody(request.body as Buffer | undefined);
      const columnOrder = parseColumnOrder(request.headers["column-order"]);
      const model = sampler.dataviews.get(params.dataview) ?? new DataviewModel();
      const result = model.replace(rows, columnOrder, rowLimit(sampler));
      sampler.dataviews.set(params.dataview, model);
      const state = model.state();
      publish(
        sampler,
        params.dataview,
        model,
        state.rows.map((r) => r.name),
      );
      return result;
    }),
    DELETE: ingest((request) => {
      const { sampler, params } = target(request);
      existing(sampler, params.dataview);
      sampler.dataviews.delete(params.dataview);
      link.send({
        kind: "dataviewDeleted",
        at: asEpochMs(Date.now()),
        address: addressOf(sampler, params.dataview),
      });
      return { deleted: params.dataview };
    }),
  });

  resource(http, `${dataviewPath}/row/:row`, {
    GET: async (request) => {
      const { sampler, params } = target(request);
      const row = existing(sampler, params.dataview)
        .state()
        .rows.find((r) => r.name === params.row);
      if (row === undefined)
        throw new VigilError("ROW_NOT_FOUND", { dataview: params.dataview, row: params.row });
      return row;
    },
    PUT: ingest((request) => {
      const { sampler, params } = target(request);
      const model = existing(sampler, params.dataview);
      const cells = parseRowBody(request.body as Buffer | undefined);
      const name = model.putRow(params.row ?? "", cells, rowLimit(sampler));
      publish(sampler, params.dataview, model, [name]);
      return { row: name };
    }),
    DELETE: ingest((request) => {
      const { sampler, params } = target(request);
      const model = existing(sampler, params.dataview);
      if (!model.deleteRow(params.row ?? "")) {
        throw new VigilError("ROW_NOT_FOUND", { dataview: params.dataview, row: params.row });
      }
      publish(sampler, params.dataview, model, []);
      return { deleted: params.row };
    }),
  });

  resource(http, "/v1/managedEntity/:me/sampler/:sampler", {
    GET: async (request) => {
      const params = request.params as { me: string; sampler: string };
      const sampler = registry.resolve(params.me, params.sampler);
      return {
        managedEntity: sampler.managedEntity,
        sampler: sampler.setup.name,
        type: sampler.setup.type,
        plugin: sampler.setup.plugin,
        samplingInfo: { samplingOptionsActive: false, status: SAMPLING_STATUS_TEXT },
        dataviews: [...sampler.dataviews.keys()].sort(),
      };
    },
  });

  const health = async () => ({ status: "OK", probe: setup.name });
  resource(http, "/v1/healthcheck", { GET: health });
  resource(http, "/healthcheck", { GET: health });

  const parameters = (port: number): ProbeParameters => ({
    osType: os.type(),
    HostName: setup.hostname,
    Port: String(port),
    OS: `${os.type()} ${os.release()}`,
    Version: VIGIL_VERSION,
  });

  return {
    name: setup.name,
    http,
    async start() {
      const url = await listen(http, setup.restApiHttpPort, setup.hostname);
      link.send({
        kind: "hello",
        at: asEpochMs(Date.now()),
        parameters: parameters(Number(new URL(url).port)),
      });
      return { http: url };
    },
    async stop() {
      await http.close();
      link.send({ kind: "bye", at: asEpochMs(Date.now()) });
    },
  };
}
