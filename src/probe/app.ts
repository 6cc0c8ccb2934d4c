/**
 * The probe: `rest-api` samplers that take data pushed over HTTP (seed area B, DESIGN 3), and its
 * link to the gateway (DESIGN 1 "probe link"). `buildProbe()` returns an unstarted service
 * (STYLE 3); the CLI starts and stops it.
 *
 * A request is accepted into the probe's memory and its changes are handed to the link in
 * published terms (one row upsert for a row PUT, one replace for a dataview PUT, …). Before any
 * change, the request is refused with 503 when the process is over its memory threshold or the
 * link's outgoing buffer is full (DESIGN 1 "Hand-offs", 3.5).
 */
import os from "node:os";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import {
  DEFAULT_CUSTOM_DATAVIEW_MAX_ROWS,
  DEFAULT_MAX_CELL_LENGTH,
  DEFAULT_MAX_COLUMNS_PER_DATAVIEW,
  DEFAULT_MEMORY_LIMIT_MB,
  DEFAULT_MEMORY_RATIO,
  DEFAULT_PROBE_HOSTNAME,
  DEFAULT_REST_API_HTTP_PORT,
  DEFAULT_REST_API_HTTPS_PORT,
  PROBE_BACKLOG_WAIT_MS,
  PROBE_MAX_DATAVIEWS_PER_SAMPLER,
  PROBE_MAX_PARAM_LENGTH,
} from "../config/defaults.js";
import type { ProbeSetup } from "../config/setup.js";
import { VigilError } from "../errors/catalog.js";
import { MemoryProtection } from "../http/memory-protection.js";
import { resource } from "../http/routes.js";
import { createHttpApp, listen } from "../http/server.js";
import { type DataLimits, DEFAULT_DATA_LIMITS } from "../limits/data-limits.js";
import { type LimitName, LimitRefusals, registerLimitRefusals } from "../limits/limit-refusals.js";
import type { Change, DataviewAddress, ProbeLimits, ProbeParameters } from "../link/protocol.js";
import type { LinkConnector } from "../link/transport.js";
import { registerMetricsRoute } from "../metrics/metrics-route.js";
import { createMetricsRegistry } from "../metrics/registry.js";
import { VIGIL_VERSION } from "../version.js";
import { DataviewModel, type DataviewSnapshot, type RowCells } from "./dataview-model.js";
import type { FkmView } from "./fkm/fkm-sampler.js";
import type { SampleScheduler } from "./fkm/sample-scheduler.js";
import { type BodyLimits, parseColumnOrder, parseDataviewBody, parseRowBody } from "./ingest-body.js";
import { checkPathNames, type IngestPathNames } from "./ingest-limits.js";
import { type LinkClientOptions, type LinkClientStatus, ProbeLinkClient } from "./link-client.js";
import { type AcceptedTotals, registerProbeMetrics } from "./probe-metrics.js";
import { SamplerRegistry, type SamplerState } from "./sampler-registry.js";
import { ProbeStreams } from "./streams/probe-streams.js";
import { registerStreamRoutes, samplerStreamsPart } from "./streams/stream-routes.js";
import { SamplerMtls, samplerMtlsHook } from "./tls/sampler-mtls.js";
import {
  changedSecureFiles,
  type HttpsListener,
  listenHttps,
  loadSecureMode,
  type SecureMode,
  type SecureModeFiles,
} from "./tls/secure-mode.js";

/** The seed's reserved name: no endpoint operates on it (seed B rule 7). */
export const STREAMS_DATAVIEW = "Streams Dataview";

/** Sampling info of rest-api samplers (seed B): options inactive, this status text. */
export const SAMPLING_STATUS_TEXT = "Sampling dependent on 3rd Party Application";

/** The gateway-wide limits a probe uses before its gateway has sent its own (DESIGN 2 defaults). */
export const DEFAULT_PROBE_LIMITS: ProbeLimits = {
  customDataviewMaxRows: DEFAULT_CUSTOM_DATAVIEW_MAX_ROWS,
  maxColumnsPerDataview: DEFAULT_MAX_COLUMNS_PER_DATAVIEW,
  maxCellLength: DEFAULT_MAX_CELL_LENGTH,
  data: DEFAULT_DATA_LIMITS,
};

/** Tuning of the probe's side of the link; the defaults come from `src/config/defaults.ts`. */
export type ProbeLinkTuning = Pick<
  LinkClientOptions,
  "maxOutgoingChanges" | "maxOutgoingBytes" | "reconnectMinMs" | "reconnectMaxMs" | "welcomeTimeoutMs"
>;

export interface ProbeOptions {
  /** The probe's name: the gateway sends the part of the setup with this name. */
  readonly name: string;
  /** How to reach the gateway: `webSocketConnector(url)` or a gateway's `connectInProcess()`. */
  readonly link: LinkConnector;
  /**
   * The probe's part of the setup (`--config`): the probe listens at once. Without it the probe
   * waits for the gateway's `welcome` and listens on the `restApiHttpPort` it names. Either way the
   * gateway's setup applies once it arrives (the gateway owns the setup, DESIGN 2).
   */
  readonly setup?: ProbeSetup;
  /** The gateway-wide limits to use until the gateway sends its own; default DEFAULT_PROBE_LIMITS. */
  readonly limits?: ProbeLimits;
  /** Address to listen on; default the setup's `hostname`. */
  readonly host?: string;
  readonly logger: Logger;
  /** Link buffer and back-off tuning (tests); defaults from `src/config/defaults.ts`. */
  readonly linkTuning?: ProbeLinkTuning;
  /** Clock and timers of stream messages and fkm samples; tests pass a `ManualScheduler`. */
  readonly scheduler?: SampleScheduler;
  /**
   * Secure mode (`-secure -ssl-certificate … -ssl-certificate-key … [-ssl-certificate-chain …]`):
   * HTTPS on `restApiHttpsPort` beside HTTP, and the chain file as the client CA of mTLS samplers
   * without their own (DESIGN 3.5). Without it there is no HTTPS listener.
   */
  readonly secure?: SecureModeFiles;
}

export interface Probe {
  readonly name: string;
  /** The HTTP app, for in-process tests (`app.inject`). */
  readonly http: FastifyInstance;
  /**
   * Connects to the gateway and listens (at once with a setup, else after the gateway's welcome);
   * resolves with the bound base URL.
   */
  start(): Promise<{ http: string; https?: string }>;
  /**
   * Stops accepting (in-flight requests finish), waits up to `deadlineMs` until the gateway has
   * acknowledged every change, says `bye` and closes the link.
   */
  stop(deadlineMs: number): Promise<void>;
  /**
   * Applies a new setup of this probe (a reloaded `--config`): sampler changes at once, port and
   * TLS changes logged as needing a restart. The gateway's setup, when it sends one, applies after.
   */
  updateSetup(setup: ProbeSetup, limits?: ProbeLimits): void;
  /** The link's state, for status pages and tests. */
  linkStatus(): LinkClientStatus;
}

interface DataviewParams {
  me: string;
  sampler: string;
  dataview: string;
  row?: string;
}

/** Builds an unstarted probe. */
export function buildProbe(options: ProbeOptions): Probe {
  const { logger, name } = options;
  const log = logger.child({ component: "probe", probe: name });
  let setup: ProbeSetup | undefined = options.setup;
  let limits: ProbeLimits = options.limits ?? DEFAULT_PROBE_LIMITS;
  const registry = new SamplerRegistry(setup ?? emptySetup(name));
  // Streams and fkm samplers (DESIGN 3.4); `submit` is only called once the link exists.
  const streams = new ProbeStreams({
    registry,
    setup: setup ?? emptySetup(name),
    submit: (changes) => link.submit(changes),
    limits: () => limits,
    logger: log,
    ...(options.scheduler === undefined ? {} : { scheduler: options.scheduler }),
  });
  let url: string | undefined;
  let listening: Promise<string> | undefined;
  const memory = new MemoryProtection("probe", () => (setup ?? emptySetup(name)).memoryProtection);
  // Secure mode's files are read at start (a bad file is a startup error naming it).
  let secureMode: SecureMode | undefined;
  let https: HttpsListener | undefined;
  const mtls = new SamplerMtls({
    secure: options.secure !== undefined,
    ...(options.secure?.chain === undefined ? {} : { chainFile: options.secure.chain }),
    logger: log,
  });
  if (setup !== undefined) mtls.configure(setup);
  // Self-metrics: this probe's own registry, served at /metrics without a token.
  const metrics = createMetricsRegistry();
  const accepted: AcceptedTotals = { rows: 0, cells: 0, droppedRows: 0 };
  const http = createHttpApp({
    logger: log,
    metrics: { registry: metrics },
    maxParamLength: PROBE_MAX_PARAM_LENGTH,
  });

  // Bodies are read raw whatever the Content-Type (DESIGN 3.2: curl's default must work; streams
  // pass bytes through untouched).
  http.removeAllContentTypeParsers();
  http.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));

  // The setup's `limits` (DESIGN 5.4b), as the gateway (or `--config`) gave them; each refusal is
  // counted at /metrics (vigil_limit_refusals_total{entry="probe"}) and logged, rate-limited.
  const data = (): DataLimits => limits.data ?? DEFAULT_DATA_LIMITS;
  const refusals = new LimitRefusals(log);
  // One object per setting of the limits, so a request allocates none.
  let cachedBodyLimits: BodyLimits = { maxCellLength: 0, nameBytes: 0, cellBytes: 0, jsonDepth: 0 };
  const bodyLimits = (): BodyLimits => {
    const { nameBytes, cellBytes, jsonDepth } = data();
    if (
      cachedBodyLimits.maxCellLength !== limits.maxCellLength ||
      cachedBodyLimits.nameBytes !== nameBytes ||
      cachedBodyLimits.cellBytes !== cellBytes ||
      cachedBodyLimits.jsonDepth !== jsonDepth
    ) {
      cachedBodyLimits = { maxCellLength: limits.maxCellLength, nameBytes, cellBytes, jsonDepth };
    }
    return cachedBodyLimits;
  };
  const checkNames = (params: IngestPathNames): void => checkPathNames(params, data().nameBytes);

  const dataviewLimits = (sampler: SamplerState) => ({
    rowLimit: limits.customDataviewMaxRows > 0 ? limits.customDataviewMaxRows : sampler.setup.rowLimit,
    maxColumns: limits.maxColumnsPerDataview,
    maxCellLength: limits.maxCellLength,
    nameBytes: data().nameBytes,
    linkFrameBytes: data().linkFrameBytes,
  });

  const addressOf = (sampler: SamplerState, dataview: string): DataviewAddress => ({
    managedEntity: sampler.managedEntity,
    sampler: sampler.setup.name,
    samplerType: sampler.setup.type,
    dataview,
  });

  const parameters = (): ProbeParameters => ({
    osType: os.type(),
    HostName: (setup ?? emptySetup(name)).hostname,
    Port: url === undefined ? "" : new URL(url).port,
    OS: `${os.type()} ${os.release()}`,
    Version: VIGIL_VERSION,
  });

  const snapshot = (): DataviewSnapshot[] => {
    const out: DataviewSnapshot[] = [];
    for (const sampler of registry.all())
      for (const model of sampler.dataviews.values()) out.push(model.snapshot());
    return out;
  };

  /** Applies a setup from the gateway (or `--config`): sampler changes at once (DESIGN 3.5). */
  const applySetup = (next: ProbeSetup, nextLimits: ProbeLimits): void => {
    const before = setup;
    if (before !== undefined && url !== undefined) {
      const restart: string[] = [];
      if (next.restApiHttpPort !== before.restApiHttpPort) restart.push("restApiHttpPort");
      // Without -secure the HTTPS port is unused, so changing it needs nothing.
      if (options.secure !== undefined && next.restApiHttpsPort !== before.restApiHttpsPort)
        restart.push("restApiHttpsPort");
      if (next.hostname !== before.hostname && options.host === undefined) restart.push("hostname");
      if (restart.length > 0) {
        log.warn({ settings: restart }, "setup changes that need a probe restart to take effect");
      }
    }
    if (secureMode !== undefined && url !== undefined) {
      const changed = changedSecureFiles(secureMode);
      if (changed.length > 0) {
        log.warn(
          { files: changed },
          "secure-mode certificate files changed; they take effect at the next probe restart",
        );
      }
    }
    setup = next;
    limits = nextLimits;
    mtls.configure(next);
    const removed = registry.update(next);
    const at = Date.now();
    const changes: Change[] = [];
    for (const sampler of removed) {
      for (const dataview of sampler.dataviews.keys()) {
        changes.push({ kind: "dataviewDelete", dataview: addressOf(sampler, dataview), at });
      }
    }
    changes.push(...streams.apply(next, removed));
    if (removed.length > 0) {
      log.info({ samplers: removed.length, dataviews: changes.length }, "samplers removed from the setup");
    }
    link.submit(changes);
  };

  const startListening = (): Promise<string> => {
    if (listening === undefined) {
      const current = setup as ProbeSetup;
      const host = options.host ?? current.hostname;
      listening = listen(http, current.restApiHttpPort, host).then(async (bound) => {
        if (secureMode !== undefined) {
          // HTTPS beside HTTP, same routes, in secure mode only (DESIGN 3.5).
          https = await listenHttps(http, secureMode, current.restApiHttpsPort, host, log).catch(
            async (error) => {
              await http.close();
              throw error;
            },
          );
        }
        url = bound;
        link.parametersChanged();
        return bound;
      });
    }
    return listening;
  };

  let welcomed: (() => void) | undefined;
  const firstWelcome = new Promise<void>((resolve) => {
    welcomed = resolve;
  });

  const link = new ProbeLinkClient({
    probe: name,
    connector: options.link,
    logger: log,
    parameters,
    snapshot: () => [...snapshot(), ...streams.snapshots()],
    ...options.linkTuning,
    async onWelcome(welcome) {
      applySetup(welcome.setup, welcome.limits);
      welcomed?.();
      // Listening before the state is sent, so the state's parameters carry the bound port.
      await startListening();
    },
    onSetup(frame) {
      log.info("setup update from the gateway");
      applySetup(frame.setup, frame.limits);
    },
  });

  const target = (request: FastifyRequest): { sampler: SamplerState; params: DataviewParams } => {
    const params = request.params as DataviewParams;
    checkNames(params);
    if (params.dataview === STREAMS_DATAVIEW) throw new VigilError("RESERVED_DATAVIEW");
    // `…/dataview/` and `…/row/` route here with an empty name: a name is required.
    if (params.dataview === "") throw emptyName("dataview", "/dataview/<name>");
    if (params.row === "") throw emptyName("row", "/row/<name>");
    return { sampler: registry.resolve(params.me, params.sampler), params };
  };

  const existing = (sampler: SamplerState, dataview: string): DataviewModel => {
    const model = sampler.dataviews.get(dataview);
    if (model === undefined)
      throw new VigilError("DATAVIEW_NOT_FOUND", { sampler: sampler.setup.name, dataview });
    return model;
  };

  // Every write is checked against memory protection and the link's buffer before it changes
  // anything, then hands its changes to the link. With room in the buffer (the common case) the
  // handler runs at once and its answer is sent without a promise (no per-request
  // allocation the answer does not need); a throw is a rejection to Fastify either way.
  const ingest =
    (handler: (request: FastifyRequest, reply: FastifyReply) => unknown) =>
    (request: FastifyRequest, reply: FastifyReply): unknown => {
      memory.check();
      if (link.hasCapacity()) return handler(request, reply);
      return link.waitForCapacity(PROBE_BACKLOG_WAIT_MS).then(() => handler(request, reply));
    };

  const dataviewPath = "/v1/managedEntity/:me/sampler/:sampler/dataview/:dataview";

  resource(http, dataviewPath, {
    GET: async (request) => {
      // An fkm sampler's one dataview, named after it (DESIGN 3.4), as a dataview GET shows one.
      const raw = request.params as { me: string; sampler: string; dataview: string };
      checkNames(raw);
      const fkm = streams.fkmView(raw.me, raw.sampler);
      if (fkm !== undefined && raw.dataview === fkm.sampler) return fkmDataviewView(fkm);
      const { sampler, params } = target(request);
      return existing(sampler, params.dataview).state();
    },
    PUT: ingest((request) => {
      const { sampler, params } = target(request);
      const rows = parseDataviewBody(request.body as Buffer | undefined, bodyLimits());
      const columnOrder = parseColumnOrder(request.headers["column-order"], data().nameBytes);
      let model = sampler.dataviews.get(params.dataview);
      if (model === undefined) {
        if (sampler.dataviews.size >= PROBE_MAX_DATAVIEWS_PER_SAMPLER) {
          throw new VigilError("TOO_MANY_DATAVIEWS", {
            sampler: sampler.setup.name,
            limit: PROBE_MAX_DATAVIEWS_PER_SAMPLER,
          });
        }
        model = new DataviewModel(addressOf(sampler, params.dataview));
      }
      const { result, changes, notes } = model.replace(rows, columnOrder, dataviewLimits(sampler));
      if (notes.ignoredColumns.length > 0) {
        // The real product's documented behaviour: such a name is not displayed and a warning logged.
        log.warn(
          {
            sampler: sampler.setup.name,
            dataview: params.dataview,
            columns: notes.ignoredColumns.slice(0, 20).map((c) => (c.length > 64 ? `${c.slice(0, 64)}…` : c)),
            count: notes.ignoredColumns.length,
          },
          "Column-Order names columns that no row has; they are not shown",
        );
      }
      sampler.dataviews.set(params.dataview, model);
      link.submit(changes);
      accepted.rows += result.rows;
      accepted.droppedRows += result.dropped;
      for (let i = 0; i < result.rows; i += 1) accepted.cells += (rows[i] as RowCells).size;
      return result;
    }),
    DELETE: ingest((request) => {
      const { sampler, params } = target(request);
      existing(sampler, params.dataview);
      sampler.dataviews.delete(params.dataview);
      link.submit([
        { kind: "dataviewDelete", dataview: addressOf(sampler, params.dataview), at: Date.now() },
      ]);
      return { deleted: params.dataview };
    }),
  });

  resource(http, `${dataviewPath}/row/:row`, {
    GET: async (request) => {
      const { sampler, params } = target(request);
      const row = existing(sampler, params.dataview).row(params.row ?? "");
      if (row === undefined)
        throw new VigilError("ROW_NOT_FOUND", { dataview: params.dataview, row: params.row });
      return row;
    },
    PUT: ingest((request) => {
      const { sampler, params } = target(request);
      const model = existing(sampler, params.dataview);
      const cells = parseRowBody(request.body as Buffer | undefined, bodyLimits());
      const { name: row, changes } = model.putRow(params.row ?? "", cells, dataviewLimits(sampler));
      link.submit(changes);
      accepted.rows += 1;
      accepted.cells += cells.size;
      return { row };
    }),
    DELETE: ingest((request) => {
      const { sampler, params } = target(request);
      const changes = existing(sampler, params.dataview).deleteRow(params.row ?? "");
      if (changes === undefined) {
        throw new VigilError("ROW_NOT_FOUND", { dataview: params.dataview, row: params.row });
      }
      link.submit(changes);
      return { deleted: params.row };
    }),
  });

  resource(http, "/v1/managedEntity/:me/sampler/:sampler", {
    GET: async (request) => {
      const params = request.params as { me: string; sampler: string };
      checkNames(params);
      const fkm = streams.fkmView(params.me, params.sampler);
      if (fkm !== undefined) {
        const { sampler: name, type, ...state } = fkm;
        return {
          managedEntity: params.me,
          sampler: name,
          type,
          plugin: "fkm",
          samplingInfo: { samplingOptionsActive: true, status: state.samplingStatus },
          dataviews: [name],
          ...state,
        };
      }
      const sampler = registry.resolve(params.me, params.sampler);
      return {
        ...samplerView(sampler),
        ...samplerStreamsPart(streams, sampler),
      };
    },
  });

  registerStreamRoutes(http, { registry, streams, ingest, checkNames });
  // Refusals at a limit are counted where they are answered: no cost on requests that pass.
  http.addHook("onError", (_request, _reply, error, done) => {
    if (error instanceof VigilError && error.code === "LIMIT_EXCEEDED") {
      refusals.refused("probe", error.fields.limit as LimitName, error.body);
    }
    done();
  });
  // Per-sampler mTLS on every sampler path, before the body is read (DESIGN 3.5).
  http.addHook("onRequest", samplerMtlsHook(registry, mtls));

  registerProbeMetrics(metrics, {
    accepted,
    *streams() {
      for (const sampler of registry.all()) yield* streams.streamsView(sampler)?.streams ?? [];
    },
    link: () => link.status(),
    memory,
  });
  registerLimitRefusals(metrics, refusals);
  registerMetricsRoute(http, metrics);

  const health = async () => ({ status: "OK", probe: name, link: link.status().state });
  resource(http, "/v1/healthcheck", { GET: health });
  resource(http, "/healthcheck", { GET: health });

  return {
    name,
    http,
    async start() {
      if (options.secure !== undefined) secureMode = loadSecureMode(options.secure);
      link.start();
      try {
        if (setup === undefined) {
          log.info({ gateway: options.link.description }, "waiting for the gateway's setup");
          await firstWelcome;
        }
        const bound = await startListening();
        return { http: bound, ...(https === undefined ? {} : { https: https.url }) };
      } catch (error) {
        await link.stop(0);
        throw error;
      }
    },
    async stop(deadlineMs) {
      const until = Date.now() + deadlineMs;
      streams.stop();
      await Promise.all([http.close(), https?.close()]);
      await link.stop(Math.max(0, until - Date.now()));
    },
    updateSetup(next, nextLimits) {
      applySetup(next, nextLimits ?? limits);
    },
    linkStatus: () => link.status(),
  };
}

/** What GET on a sampler path shows of the sampler itself and its dataviews (DESIGN 3.1). */
export interface SamplerView {
  readonly managedEntity: string;
  readonly sampler: string;
  readonly type: string;
  readonly plugin: string;
  readonly samplingInfo: { readonly samplingOptionsActive: boolean; readonly status: string };
  /** The names of its custom dataviews, sorted. */
  readonly dataviews: readonly string[];
}

/**
 * The sampler part of GET on a sampler path (DESIGN 3.1): sampling options inactive with the seed's
 * status text, and its dataviews. The route adds the streams part beside it.
 */
export function samplerView(sampler: SamplerState): SamplerView {
  return {
    managedEntity: sampler.managedEntity,
    sampler: sampler.setup.name,
    type: sampler.setup.type,
    plugin: sampler.setup.plugin,
    samplingInfo: { samplingOptionsActive: false, status: SAMPLING_STATUS_TEXT },
    dataviews: [...sampler.dataviews.keys()].sort(),
  };
}

/** An fkm sampler's dataview in the shape of a dataview GET: one row per keyword (DESIGN 3.4). */
function fkmDataviewView(fkm: FkmView) {
  return {
    columns: ["pattern", "severity", "matches", "lastMatchTime", "lastMatchText"],
    rows: fkm.keywords.map((k) => ({
      name: k.name,
      cells: {
        pattern: k.pattern,
        severity: k.severity,
        matches: String(k.matches),
        lastMatchTime: k.lastMatchTime,
        lastMatchText: k.lastMatchText,
      },
    })),
    headlines: { samplingStatus: fkm.samplingStatus, messagesScanned: String(fkm.messagesScanned) },
  };
}

/** The 400 for an empty dataview or row name in the path (`…/dataview/`). */
function emptyName(what: "dataview" | "row", pattern: string): VigilError {
  return new VigilError("BAD_REQUEST", {
    detail: `The ${what} name in the path is empty; name the ${what}: …${pattern}.`,
  });
}

/** The setup of a probe that has not heard from its gateway yet: no entities, default settings. */
function emptySetup(name: string): ProbeSetup {
  return {
    name,
    hostname: DEFAULT_PROBE_HOSTNAME,
    restApiHttpPort: DEFAULT_REST_API_HTTP_PORT,
    restApiHttpsPort: DEFAULT_REST_API_HTTPS_PORT,
    memoryProtection: { limitMb: DEFAULT_MEMORY_LIMIT_MB, ratio: DEFAULT_MEMORY_RATIO },
    managedEntities: [],
  };
}
