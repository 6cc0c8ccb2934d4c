/**
 * The probe: `rest-api` samplers that take data pushed over HTTP (seed area B, DESIGN 3), and its
 * link to the gateway (DESIGN 1 "probe link"). `buildProbe()` returns an unstarted service
 * (STYLE 3); the CLI starts and stops it.
 *
 * This module composes the probe: its setup and limits, the sampler registry, streams and fkm, the
 * link client, memory protection, secure mode and self-metrics, and the routes of `http/`
 * (dataviews and rows, samplers, health) and `streams/stream-routes.ts`. A request is accepted into
 * the probe's memory and its changes are handed to the link in published terms. Before any change,
 * the request is refused with 503 when the process is over its memory threshold or the link's
 * outgoing buffer is full (DESIGN 1 "Hand-offs", 3.5: `http/ingest-admission.ts`).
 */
import os from "node:os";
import type { FastifyInstance } from "fastify";
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
  PROBE_MAX_PARAM_LENGTH,
} from "../config/defaults.js";
import type { ProbeSetup } from "../config/setup.js";
import { VigilError } from "../errors/catalog.js";
import { MemoryProtection } from "../http/memory-protection.js";
import { createHttpApp, listen } from "../http/server.js";
import { DEFAULT_DATA_LIMITS } from "../limits/data-limits.js";
import { type LimitName, LimitRefusals, registerLimitRefusals } from "../limits/limit-refusals.js";
import type { Change, ProbeLimits, ProbeParameters } from "../link/protocol.js";
import type { LinkConnector } from "../link/transport.js";
import { registerMetricsRoute } from "../metrics/metrics-route.js";
import { createMetricsRegistry } from "../metrics/registry.js";
import { VIGIL_VERSION } from "../version.js";
import type { DataviewSnapshot } from "./dataview-model.js";
import type { SampleScheduler } from "./fkm/sample-scheduler.js";
import { addressOf, registerDataviewRoutes } from "./http/dataview-routes.js";
import { registerHealthRoutes } from "./http/health-routes.js";
import { ingestAdmission } from "./http/ingest-admission.js";
import { registerSamplerRoutes } from "./http/sampler-routes.js";
import { checkPathNames, type IngestPathNames } from "./ingest-limits.js";
import { type LinkClientOptions, type LinkClientStatus, ProbeLinkClient } from "./link-client.js";
import { type AcceptedTotals, registerProbeMetrics } from "./probe-metrics.js";
import { SamplerRegistry } from "./sampler-registry.js";
import { ProbeStreams } from "./streams/probe-streams.js";
import { registerStreamRoutes } from "./streams/stream-routes.js";
import { SamplerMtls, samplerMtlsHook } from "./tls/sampler-mtls.js";
import {
  changedSecureFiles,
  type HttpsListener,
  listenHttps,
  loadSecureMode,
  type SecureMode,
  type SecureModeFiles,
} from "./tls/secure-mode.js";

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
  | "maxOutgoingChanges"
  | "maxOutgoingBytes"
  | "backlogWaitMs"
  | "maxWaitingRequests"
  | "maxWaitingBytes"
  | "reconnectMinMs"
  | "reconnectMaxMs"
  | "welcomeTimeoutMs"
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
  const refusals = new LimitRefusals(log);
  const checkNames = (params: IngestPathNames): void =>
    checkPathNames(params, (limits.data ?? DEFAULT_DATA_LIMITS).nameBytes);

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

  const ingest = ingestAdmission(memory, link);
  registerDataviewRoutes(http, {
    registry,
    streams,
    ingest,
    checkNames,
    limits: () => limits,
    submit: (changes) => link.submit(changes),
    accepted,
    log,
  });
  registerSamplerRoutes(http, { registry, streams, checkNames });
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

  registerHealthRoutes(http, name, () => link.status().state);

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
