/**
 * A probe as a running service (DESIGN 1 `vigil probe`, and each probe inside `vigil up`).
 */
import type { Logger } from "pino";
import { type DeploymentSetup, deploymentSetup } from "../config/setup.js";
import { probeLimits } from "../link/protocol.js";
import type { LinkConnector } from "../link/transport.js";
import { buildProbe, type Probe } from "../probe/app.js";
import type { SecureModeFiles } from "../probe/tls/secure-mode.js";
import type { RunningService } from "./service.js";

export interface ProbeServiceOptions {
  readonly name: string;
  /** The gateway link: a gateway's `connectInProcess()` or `webSocketConnector(url)`. */
  readonly link: LinkConnector;
  /** The setup file's content (`--config`, or `vigil up`); without it the gateway sends the probe its part. */
  readonly setup?: DeploymentSetup;
  /** Address to listen on; default the probe's `hostname` in the setup. */
  readonly host?: string;
  /** Secure mode's files (`-secure …`): HTTPS on the probe's restApiHttpsPort beside HTTP. */
  readonly secure?: SecureModeFiles;
  readonly logger: Logger;
}

export interface ProbeService extends RunningService {
  readonly probe: Probe;
}

/** Starts the probe (it listens once it has its setup); resolves with its URL. */
export async function startProbeService(options: ProbeServiceOptions): Promise<ProbeService> {
  const { name, logger, setup } = options;
  const own = setup?.probes.find((p) => p.name === name);
  if (setup !== undefined && own === undefined) {
    const known = setup.probes.map((p) => p.name).join(", ") || "none";
    throw new Error(`probe '${name}' is not in the setup (probes: ${known})`);
  }
  const probe = buildProbe({
    name,
    link: options.link,
    ...(own === undefined || setup === undefined
      ? {}
      : { setup: own, limits: probeLimits(setup.gateway, setup.limits) }),
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(options.secure === undefined ? {} : { secure: options.secure }),
    logger,
  });
  const { http, https } = await probe.start();
  logger.info(
    { service: "probe", probe: name, url: http, ...(https === undefined ? {} : { https }) },
    "listening",
  );
  return {
    probe,
    urls: { [`probe:${name}`]: http, ...(https === undefined ? {} : { [`probe:${name}:https`]: https }) },
    reload(changed) {
      const next = deploymentSetup(changed);
      const mine = next.probes.find((p) => p.name === name);
      if (mine === undefined) {
        logger.warn({ probe: name }, "the reloaded setup no longer names this probe; keeping its setup");
        return;
      }
      probe.updateSetup(mine, probeLimits(next.gateway, next.limits));
    },
    // Secure mode's files are the seed's: a changed one needs a probe restart (secure-mode.ts).
    reloadCertificates: () => undefined,
    stop: (deadlineMs) => probe.stop(deadlineMs),
  };
}
