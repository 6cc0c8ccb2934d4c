/**
 * Per-sampler mutual TLS (DESIGN 3.5, seed B "Sampler configuration fields"). A rest-api sampler with
 * `verifyClientCertificate: true` takes only HTTPS requests whose client certificate chains to its
 * trusted CAs:
 *
 * - `clientCaCertificate: {enabled: true, path}`: the certificates of that file;
 * - `clientCaCertificate.enabled: false`: the probe's `-ssl-certificate-chain` file (seed B rule 3),
 *   with a warning logged once per sampler. A `path` given while `enabled` is false is not used.
 *
 * Anything else — plain HTTP, no certificate, a certificate that does not verify, a CA file that
 * cannot be read — is a 403 `Client certificate required`. Sampler settings are read at each request,
 * so a reloaded setup applies at once; `configure()` re-reads the CA files a new setup
 * names when they changed on disk, so a reload also picks up a replaced CA file.
 *
 * Bounds: at most PROBE_MAX_CLIENT_CA_FILES parsed files (only those the setup names are kept), each
 * at most PROBE_MAX_CLIENT_CA_FILE_BYTES; one verification result cached per TLS connection.
 */
import type { X509Certificate } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { PROBE_MAX_CLIENT_CA_FILE_BYTES, PROBE_MAX_CLIENT_CA_FILES } from "../../config/defaults.js";
import type { ProbeSetup, RestApiSampler } from "../../config/setup.js";
import { VigilError } from "../../errors/catalog.js";
import type { SamplerRegistry, SamplerState } from "../sampler-registry.js";
import { type ChainResult, parsePemCertificates, peerChain, verifyClientChain } from "./client-cert.js";

export interface SamplerMtlsOptions {
  /** Whether the probe runs in secure mode (an HTTPS listener exists). */
  readonly secure: boolean;
  /** The `-ssl-certificate-chain` file: the trusted CAs of samplers whose client CA is disabled. */
  readonly chainFile?: string;
  readonly logger: Logger;
  /** Epoch ms for certificate validity; default `Date.now`. */
  readonly now?: () => number;
}

/** A parsed CA file, or why it could not be used. */
interface CaFile {
  readonly stamp: string;
  readonly anchors?: readonly X509Certificate[];
  readonly error?: string;
}

/** Counters for status and tests. */
export interface MtlsCounters {
  /** Requests refused with 403. */
  readonly refused: number;
  /** Client certificate chains verified (a cached result is not counted again). */
  readonly verifications: number;
  /** CA files read and parsed since start. */
  readonly caFileReads: number;
}

/** The per-sampler client-certificate gate of one probe. */
export class SamplerMtls {
  private readonly caFiles = new Map<string, CaFile>();
  /** Warnings already logged (once per sampler and kind); bounded by the samplers of the setups seen. */
  private readonly warned = new Set<string>();
  private readonly perSocket = new WeakMap<
    Socket,
    { anchors: readonly X509Certificate[]; result: ChainResult }
  >();
  private readonly now: () => number;
  private refused = 0;
  /**
   * Whether a sampler of the last setup given to `configure` verifies client certificates; while
   * none does, the hook skips resolving the sampler (nothing per request it does not need).
   */
  private verifying = false;
  private verifications = 0;
  private caFileReads = 0;

  constructor(private readonly options: SamplerMtlsOptions) {
    this.now = options.now ?? Date.now;
  }

  /** The CA file that sampler trusts, or undefined when it has none (no chain file given). */
  caFileOf(sampler: RestApiSampler): string | undefined {
    return sampler.clientCaCertificate.enabled ? sampler.clientCaCertificate.path : this.options.chainFile;
  }

  /**
   * Takes a (new) setup of the probe: loads the CA files its mTLS samplers name (again when a file
   * changed on disk), forgets the others, and logs what will refuse every request (no secure mode,
   * no CA file) or falls back to the chain file. Never throws: a bad file is logged and the
   * samplers that use it refuse requests until it is fixed and the setup reloaded.
   */
  configure(setup: ProbeSetup): void {
    const log = this.options.logger;
    const wanted = new Set<string>();
    this.verifying = false;
    for (const entity of setup.managedEntities) {
      for (const sampler of entity.samplers) {
        if (sampler.plugin !== "rest-api" || !sampler.verifyClientCertificate) continue;
        this.verifying = true;
        const where = { managedEntity: entity.name, sampler: sampler.name, type: sampler.type };
        const key = JSON.stringify([entity.name, sampler.name, sampler.type]);
        if (!this.options.secure && this.firstTime(`insecure:${key}`)) {
          log.warn(
            where,
            "sampler has verifyClientCertificate but the probe is not in secure mode (-secure): every request to it is refused with 403",
          );
        }
        const file = this.caFileOf(sampler);
        if (!sampler.clientCaCertificate.enabled && this.firstTime(`fallback:${key}`)) {
          log.warn(
            { ...where, chainFile: file ?? null },
            file === undefined
              ? "sampler verifies client certificates but its clientCaCertificate is disabled and no -ssl-certificate-chain was given: every request to it is refused with 403"
              : "sampler's clientCaCertificate is disabled: client certificates are verified against the -ssl-certificate-chain file",
          );
        }
        if (file !== undefined) wanted.add(file);
      }
    }
    for (const path of this.caFiles.keys()) if (!wanted.has(path)) this.caFiles.delete(path);
    let loaded = 0;
    for (const path of wanted) {
      if (loaded >= PROBE_MAX_CLIENT_CA_FILES) {
        this.caFiles.delete(path);
        log.error(
          { file: path, limit: PROBE_MAX_CLIENT_CA_FILES },
          "too many distinct client CA files in the setup; samplers using this one refuse every request",
        );
        continue;
      }
      loaded++;
      const entry = this.load(path);
      if (entry.error !== undefined)
        log.error({ file: path, reason: entry.error }, "client CA file unusable");
    }
  }

  /**
   * Throws the 403 CLIENT_CERTIFICATE_REQUIRED unless the request may reach `sampler`: always passes
   * for a sampler without `verifyClientCertificate`.
   */
  check(socket: Socket, state: SamplerState): void {
    const sampler = state.setup;
    if (!sampler.verifyClientCertificate) return;
    const result = this.verify(socket, sampler);
    if (result.ok) return;
    this.refused++;
    throw new VigilError("CLIENT_CERTIFICATE_REQUIRED", { sampler: sampler.name });
  }

  /** Whether any sampler of the configured setup has `verifyClientCertificate`. */
  get active(): boolean {
    return this.verifying;
  }

  /** Counters for status pages and tests. */
  counters(): MtlsCounters {
    return { refused: this.refused, verifications: this.verifications, caFileReads: this.caFileReads };
  }

  private firstTime(warning: string): boolean {
    if (this.warned.has(warning)) return false;
    this.warned.add(warning);
    return true;
  }

  private verify(socket: Socket, sampler: RestApiSampler): ChainResult {
    if (!isTls(socket)) return { ok: false, reason: "plain HTTP" };
    const path = this.caFileOf(sampler);
    const file = path === undefined ? undefined : this.caFiles.get(path);
    if (file?.anchors === undefined) {
      return { ok: false, reason: file?.error ?? "no usable client CA file" };
    }
    const cached = this.perSocket.get(socket);
    if (
      cached !== undefined &&
      cached.anchors === file.anchors &&
      (!cached.result.ok || this.stillValid(socket))
    ) {
      return cached.result;
    }
    this.verifications++;
    let result: ChainResult;
    try {
      result = verifyClientChain(peerChain(socket), file.anchors, this.now());
    } catch (error) {
      result = { ok: false, reason: `the client certificate could not be read (${String(error)})` };
    }
    this.perSocket.set(socket, { anchors: file.anchors, result });
    if (!result.ok) {
      this.options.logger.info(
        { sampler: sampler.name, type: sampler.type, reason: result.reason, caFile: path },
        "client certificate refused",
      );
    }
    return result;
  }

  /** A connection's cached success holds while its leaf certificate is still within its dates. */
  private stillValid(socket: TLSSocket): boolean {
    const leaf = socket.getPeerX509Certificate();
    return leaf !== undefined && this.now() <= Date.parse(leaf.validTo);
  }

  /** Reads and parses a CA file unless the cached parse is of the same file state. */
  private load(path: string): CaFile {
    let stamp: string;
    let size: number;
    try {
      const stat = statSync(path);
      stamp = `${stat.mtimeMs}:${stat.size}:${stat.ino}`;
      size = stat.size;
    } catch (error) {
      const entry = { stamp: "", error: `cannot read '${path}': ${reason(error)}` };
      this.caFiles.set(path, entry);
      return entry;
    }
    const cached = this.caFiles.get(path);
    if (cached !== undefined && cached.stamp === stamp) return cached;
    let entry: CaFile;
    if (size > PROBE_MAX_CLIENT_CA_FILE_BYTES) {
      entry = { stamp, error: `'${path}' is larger than ${PROBE_MAX_CLIENT_CA_FILE_BYTES} bytes` };
    } else {
      try {
        this.caFileReads++;
        const anchors = parsePemCertificates(readFileSync(path, "utf8"));
        const notCa = anchors.filter((cert) => !cert.ca).length;
        entry =
          notCa === anchors.length
            ? { stamp, error: `'${path}' holds no CA certificate (basicConstraints CA:TRUE)` }
            : { stamp, anchors: anchors.filter((cert) => cert.ca) };
      } catch (error) {
        entry = { stamp, error: `cannot use '${path}': ${reason(error)}` };
      }
    }
    this.caFiles.set(path, entry);
    return entry;
  }
}

/**
 * The Fastify `onRequest` hook that applies {@link SamplerMtls} to every route naming a sampler
 * (`:me` and `:sampler` params: dataviews, rows, streams, the sampler itself), before the body is
 * read. A path whose sampler does not resolve passes: its handler answers the 404/400.
 */
export function samplerMtlsHook(registry: SamplerRegistry, mtls: SamplerMtls) {
  // Callback form: no promise per request; an error passed to `done` is answered by the
  // central error handler exactly like a thrown one.
  return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void => {
    const params = request.params as { me?: unknown; sampler?: unknown } | undefined;
    if (!mtls.active || typeof params?.me !== "string" || typeof params.sampler !== "string") {
      done();
      return;
    }
    let state: SamplerState;
    try {
      state = registry.resolve(params.me, params.sampler);
    } catch {
      done();
      return;
    }
    try {
      mtls.check(request.raw.socket, state);
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  };
}

function isTls(socket: Socket): socket is TLSSocket {
  return (socket as Partial<TLSSocket>).encrypted === true;
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
