/**
 * `vigil probe (--gateway URL | --config FILE) --name NAME [--link-secret-file FILE] [--host HOST]
 * [-secure -ssl-certificate P -ssl-certificate-key P [-ssl-certificate-chain P]]` (DESIGN 1; the
 * secure-mode flags also take two dashes, see src/probe/tls/secure-flags.ts). With `--gateway` the
 * probe takes its part of the setup from the gateway; with `--config` it reads it from the file
 * (and listens at once) and links to `--gateway`, or to the setup's gateway port on this host when
 * `--gateway` is not given. Either way the link presents the probe's link secret (DESIGN 5.4b):
 * the `--link-secret-file`'s, else `VIGIL_LINK_SECRET`'s, else (with `--config`) the probe's own
 * `linkSecret`/`linkSecretFile` in the setup. The probe listens on the loopback address unless
 * `--host` says otherwise (`--host 0.0.0.0` for every interface).
 */
import type { Command } from "commander";
import { startProbeService } from "../../compose/probe-service.js";
import { DEFAULT_GATEWAY_PORT } from "../../config/defaults.js";
import { probeLinkSecret } from "../../config/link-secret.js";
import { loadSetupFile } from "../../config/load-setup.js";
import { readableCertificate } from "../../http/pinned-certificate.js";
import { tlsEnabled } from "../../http/server-tls.js";
import { webSocketConnector } from "../../link/websocket.js";
import {
  addSecureModeOptions,
  type SecureFlagValues,
  secureModeFromFlags,
} from "../../probe/tls/secure-flags.js";
import { createLogger, type LogFormat, logFormatOption } from "../logger.js";
import { runService } from "../run-service.js";
import { LOOPBACK } from "./hosts.js";

interface ProbeCommandOptions extends SecureFlagValues {
  gateway?: string;
  config?: string;
  linkSecretFile?: string;
  name: string;
  host: string;
  logLevel: string;
  logFormat: LogFormat;
}

export function registerProbe(program: Command): void {
  addSecureModeOptions(program.command("probe"))
    .description("a probe: rest-api samplers taking pushed data, linked to a gateway")
    .requiredOption("--name <name>", "the probe's name in the setup")
    .option("--gateway <url>", "the gateway to link to, e.g. http://gateway-host:7039")
    .option("--config <file>", "read the probe's setup from this file instead of the gateway")
    .option(
      "--link-secret-file <file>",
      "file (mode 0600) holding the probe's link secret; default: the VIGIL_LINK_SECRET environment variable",
    )
    .option("--host <host>", "address to listen on (0.0.0.0: every interface)", LOOPBACK)
    .option("--log-level <level>", "pino log level", "info")
    .addOption(logFormatOption())
    .action(async (options: ProbeCommandOptions) => {
      if (options.gateway === undefined && options.config === undefined) {
        throw new Error("vigil probe needs --gateway URL (setup from the gateway) or --config FILE");
      }
      const secure = secureModeFromFlags(options);
      const logger = createLogger(options.logLevel, options.logFormat);
      // A probe reads its own link secret file only: its host need not hold the other probes'.
      const load = { linkSecretFiles: { probe: options.name } } as const;
      const setup = options.config === undefined ? undefined : loadSetupFile(options.config, load);
      // A setup whose gateway serves HTTPS: the link is wss, trusting gateway.tls.certificate.
      const gatewayTls = setup !== undefined && tlsEnabled(setup.gateway.tls);
      const gateway =
        options.gateway ??
        `${gatewayTls ? "https" : "http"}://127.0.0.1:${setup?.gateway.port ?? DEFAULT_GATEWAY_PORT}`;
      const gatewayCertificate = gatewayTls ? readableCertificate(setup.gateway.tls.certificate) : undefined;
      const secret = probeLinkSecret(
        options.linkSecretFile,
        setup?.linkSecrets.find((s) => s.probe === options.name)?.secret,
      );
      if (secret === undefined) {
        logger.warn(
          { probe: options.name },
          "no link secret given (--link-secret-file FILE or VIGIL_LINK_SECRET): a gateway refuses the link",
        );
      }
      await runService({
        logger,
        ...(setup === undefined || options.config === undefined
          ? {}
          : { config: { path: options.config, setup, load } }),
        start: () =>
          startProbeService({
            name: options.name,
            link: webSocketConnector(gateway, {
              ...(gatewayCertificate === undefined ? {} : { gatewayCertificate }),
              ...(secret === undefined ? {} : { secret }),
              ...(setup === undefined ? {} : { limits: setup.limits }),
            }),
            ...(setup === undefined ? {} : { setup }),
            host: options.host,
            ...(secure === undefined ? {} : { secure }),
            logger,
          }),
      });
    });
}
