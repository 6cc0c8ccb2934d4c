/**
 * The secure-mode flags of `vigil probe` and `vigil up` (DESIGN 1): the seed spells them with one
 * dash, `-secure -ssl-certificate P -ssl-certificate-key P [-ssl-certificate-chain P]`, as the real
 * probe does. Commander only knows one-letter short flags (`-s`) and `--long` options and would read
 * `-secure` as `-s -e -c …`, so the command's argument list is rewritten before commander parses it:
 * exactly these four single-dash names (also as `-name=value`) become their `--` form. Nothing else
 * is touched; the value of an option that takes one (`--name -secure`) is left as it is. Both
 * spellings work.
 */
import type { Command } from "commander";
import type { SecureModeFiles } from "./secure-mode.js";

const SINGLE_DASH = ["-secure", "-ssl-certificate", "-ssl-certificate-key", "-ssl-certificate-chain"];

/** The commander values of the secure-mode flags. */
export interface SecureFlagValues {
  secure?: boolean;
  sslCertificate?: string;
  sslCertificateKey?: string;
  sslCertificateChain?: string;
}

/** Adds the secure-mode flags to a command and accepts their single-dash spelling. */
export function addSecureModeOptions(command: Command): Command {
  command
    .option("--secure", "secure mode: HTTPS on each probe's restApiHttpsPort beside HTTP (also -secure)")
    .option("--ssl-certificate <file>", "server certificate, PEM (also -ssl-certificate)")
    .option(
      "--ssl-certificate-key <file>",
      "private key of that certificate, PEM (also -ssl-certificate-key)",
    )
    .option(
      "--ssl-certificate-chain <file>",
      "CA chain, PEM: sent after the certificate, and trusted for client certificates of samplers without their own clientCaCertificate (also -ssl-certificate-chain)",
    );
  const parseOptions = command.parseOptions.bind(command);
  command.parseOptions = (argv: string[]) => parseOptions(doubleDashSecureFlags(command, argv));
  return command;
}

/**
 * `argv` with the single-dash secure-mode flags in their `--` form; the values of options that take
 * one, and everything after `--`, are kept as they are.
 */
export function doubleDashSecureFlags(command: Command, argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--") {
      out.push(...argv.slice(i));
      break;
    }
    const [name] = arg.split("=", 1) as [string];
    const rewritten = SINGLE_DASH.includes(name) ? `-${arg}` : arg;
    out.push(rewritten);
    const option = command.options.find((o) => o.long === rewritten || o.short === rewritten);
    if (option?.required === true && i + 1 < argv.length) out.push(argv[++i] as string);
  }
  return out;
}

/**
 * The secure-mode files the flags name, or undefined without `-secure`. Throws when `-secure` lacks
 * its certificate or key, or when a certificate flag is given without `-secure` (it would do nothing).
 */
export function secureModeFromFlags(values: SecureFlagValues): SecureModeFiles | undefined {
  const given = [
    ["-ssl-certificate", values.sslCertificate],
    ["-ssl-certificate-key", values.sslCertificateKey],
    ["-ssl-certificate-chain", values.sslCertificateChain],
  ] as const;
  if (values.secure !== true) {
    const stray = given.filter(([, value]) => value !== undefined).map(([flag]) => flag);
    if (stray.length > 0) {
      throw new Error(
        `${stray.join(", ")} given without -secure; add -secure to serve HTTPS on restApiHttpsPort`,
      );
    }
    return undefined;
  }
  if (values.sslCertificate === undefined || values.sslCertificateKey === undefined) {
    throw new Error("-secure needs -ssl-certificate FILE and -ssl-certificate-key FILE");
  }
  return {
    certificate: values.sslCertificate,
    key: values.sslCertificateKey,
    ...(values.sslCertificateChain === undefined ? {} : { chain: values.sslCertificateChain }),
  };
}
