/**
 * The hub as a running service (DESIGN 1 `vigil hub`, and the hub inside `vigil up`): store from
 * its URL, consumer from the bus URL (NATS JetStream) or the in-process bus, HTTP on host:port.
 */
import type { Logger } from "pino";
import type { BusConsumer } from "../bus/bus.js";
import type { MemoryBus } from "../bus/memory-bus.js";
import { createNatsConsumer } from "../bus/nats/nats-consumer.js";
import { displayUrl, type NatsBusUrl, parseNatsBusUrl } from "../bus/nats/nats-stream.js";
import { DEFAULT_NATS_STREAM, DEFAULT_NATS_SUBJECT_PREFIX } from "../config/defaults.js";
import type { Setup } from "../config/setup.js";
import { preparePrivateDir } from "../fs/private-files.js";
import { buildHub } from "../hub/app.js";
import { openStore } from "../hub/store/open-store.js";
import type { RunningService } from "./service.js";

export interface HubServiceOptions {
  readonly setup: Setup;
  /** `duckdb:PATH` (default: the data dir's file) or `postgres://…`. */
  readonly storeUrl: string;
  /**
   * `nats://HOST:PORT[?stream=NAME&subjectPrefix=PREFIX]` to consume from NATS JetStream (see
   * `natsNames`); absent with `memoryBus`, or backfill only.
   */
  readonly busUrl?: string;
  readonly memoryBus?: MemoryBus;
  readonly dataDir: string;
  readonly host: string;
  readonly port?: number;
  /** The gateway the web console's actions go to (`vigil hub --gateway`, or `vigil up`'s own). */
  readonly gatewayUrl?: () => string | undefined;
  readonly logger: Logger;
}

/**
 * The JetStream stream and subject prefix a hub consumes, each taken from the first of: the
 * `--bus` URL's query (`?stream=NAME&subjectPrefix=PREFIX`, `bus`), the setup's `nats` publish
 * target (when the hub's setup is the deployment's, with a `gateway` section), the defaults
 * VIGIL / vigil. The command line wins, as everywhere (docs/decisions.md).
 */
export function natsNames(
  setup: Setup,
  bus: Pick<NatsBusUrl, "stream" | "subjectPrefix"> = {},
): { stream: string; subjectPrefix: string } {
  const target = setup.gateway?.publish.find((p) => p.kind === "nats");
  const fromSetup =
    target?.kind === "nats"
      ? { stream: target.stream, subjectPrefix: target.subjectPrefix }
      : { stream: DEFAULT_NATS_STREAM, subjectPrefix: DEFAULT_NATS_SUBJECT_PREFIX };
  return {
    stream: bus.stream ?? fromSetup.stream,
    subjectPrefix: bus.subjectPrefix ?? fromSetup.subjectPrefix,
  };
}

/**
 * `--bus`: a `nats://` URL, optionally naming the stream and subject prefix in its query; throws an
 * Error naming the fix otherwise (`parseNatsBusUrl`).
 */
export function busOption(text: string): NatsBusUrl {
  if (!/^nats:\/\//i.test(text)) {
    throw new Error(
      `--bus takes a NATS URL (nats://HOST:PORT[?stream=NAME&subjectPrefix=PREFIX]), not '${displayUrl(text)}'`,
    );
  }
  return parseNatsBusUrl(text);
}

/** Opens the store, starts consuming and listens; resolves once the hub serves. */
export async function startHubService(options: HubServiceOptions): Promise<RunningService> {
  const { setup, logger } = options;
  // The bus URL is checked before anything opens, so a typo fails the start with its fix.
  const bus = options.busUrl === undefined ? undefined : busOption(options.busUrl);
  // Data dir 0700 and files 0600 (umask 0077), before the store creates its files.
  await preparePrivateDir(options.dataDir);
  const store = await openStore(options.storeUrl, options.dataDir, {
    maxSeriesPerEntity: setup.hub.maxSeriesPerEntity,
  });
  let consumer: BusConsumer | undefined = options.memoryBus;
  if (bus !== undefined) {
    const names = natsNames(setup, bus);
    const fromSetup = natsNames(setup);
    if (
      (bus.stream !== undefined && fromSetup.stream !== names.stream) ||
      (bus.subjectPrefix !== undefined && fromSetup.subjectPrefix !== names.subjectPrefix)
    ) {
      logger.info(
        { stream: names.stream, subjectPrefix: names.subjectPrefix, setup: fromSetup },
        "the --bus URL names the JetStream stream; it takes precedence over the setup",
      );
    }
    consumer = createNatsConsumer({
      url: bus.url,
      ...names,
      logger: logger.child({ component: "hub" }),
      jsonDepth: setup.limits.jsonDepth,
    });
  }
  const hub = await buildHub({
    setup,
    store,
    ...(consumer === undefined ? {} : { consumer }),
    logger,
    dataDir: options.dataDir,
    ...(options.gatewayUrl === undefined ? {} : { gatewayUrl: options.gatewayUrl }),
  });
  let url: string;
  try {
    url = await hub.start(options.port ?? setup.hub.port, options.host);
  } catch (error) {
    await hub.stop(0).catch(() => undefined);
    throw error;
  }
  logger.info({ service: "hub", url }, "listening");
  let current = setup;
  return {
    urls: { hub: url },
    reload(next) {
      // TLS files and the application keys and roles take effect now; the rest at the next start.
      const later = (settings: Setup["hub"]) => {
        const { tls: _tls, security, ...rest } = settings;
        const { appKeys: _keys, kerberosRoles: _roles, ...securityRest } = security;
        return JSON.stringify([rest, securityRest]);
      };
      if (later(next.hub) !== later(current.hub)) {
        logger.warn("hub settings changed; they take effect when the hub restarts");
      }
      const before = current;
      current = next;
      if (JSON.stringify(next.hub.tls) !== JSON.stringify(before.hub.tls))
        hub.reloadCertificates(next.hub.tls);
      hub.reloadKeys(next.hub.security).catch((error: unknown) => {
        logger.error({ err: error }, "application keys could not be reloaded; the old ones stay in force");
      });
    },
    reloadCertificates: () => hub.reloadCertificates(current.hub.tls),
    stop: (deadlineMs) => hub.stop(deadlineMs),
  };
}
