/**
 * Authenticates a client that asks for a token (DESIGN 5.4): an application key sent by HTTP Basic
 * (or, at the OAuth endpoint, form fields), or Kerberos SPNEGO. It also applies the limits of the
 * token endpoints (docs/security.md): before any secret is checked, the remote address
 * and the client id must be within their rate and not locked out; every failure is counted.
 */
import type { AppKeys } from "./app-keys.js";
import { type AttemptLimits, addressKey, type Refusal } from "./attempt-limits.js";
import { type Credentials, formDecode } from "./credentials.js";
import type { KerberosState } from "./kerberos.js";
import type { WorkLimiter } from "./work-limiter.js";

/** Protection space of every hub challenge (RFC 9110 §11.5). */
export const REALM = "vigil";

/** How a client proved who it is; a refresh token can only be spent the same way (RFC 6749 §6). */
export type ClientMethod = "app-key" | "kerberos";

/** Who a client turned out to be, or why it was refused (for the log; never holds the secret). */
export type ClientAuthResult =
  | {
      readonly ok: true;
      readonly sub: string;
      readonly method: ClientMethod;
      /** SPNEGO's last token for the client (RFC 4559 §5: mutual authentication), if any. */
      readonly negotiateResponse?: string;
    }
  | { readonly ok: false; readonly reason: string };

/** A request refused by the rate limits or a lockout before its secret was checked (429). */
export class TooManyAttemptsError extends Error {
  /** Whole seconds for `Retry-After` (RFC 9110 §10.2.3), at least 1. */
  readonly retryAfterSeconds: number;

  constructor(
    readonly refusal: Refusal,
    readonly subject: "address" | "client",
  ) {
    super(
      refusal.reason === "lockout"
        ? `Too many failed authentications from this ${subject === "address" ? "address" : "client id"}; it is locked out.`
        : `Too many token requests from this ${subject === "address" ? "address" : "client id"}.`,
    );
    this.name = "TooManyAttemptsError";
    this.retryAfterSeconds = Math.max(1, Math.ceil(refusal.retryAfterMs / 1000));
  }
}

export interface ClientAuthOptions {
  readonly appKeys: AppKeys;
  readonly limits: AttemptLimits;
  readonly kerberos: KerberosState;
  /** Bounds the Kerberos accepts (the application keys hold their own reference to it). */
  readonly limiter: WorkLimiter;
}

/** The token endpoints' client authentication and its limits. */
export class ClientAuthenticator {
  /** The application keys in force; replaced when the setup's keys change (DESIGN 5.4a). */
  appKeys: AppKeys;
  private readonly limits: AttemptLimits;
  private readonly kerberos: KerberosState;
  private readonly limiter: WorkLimiter;

  constructor(options: ClientAuthOptions) {
    this.appKeys = options.appKeys;
    this.limits = options.limits;
    this.kerberos = options.kerberos;
    this.limiter = options.limiter;
  }

  /** Whether SPNEGO is on: enabled in the setup and the binding loaded. */
  get negotiates(): boolean {
    return this.kerberos.state === "on";
  }

  /**
   * The `WWW-Authenticate` value of a 401 from a token endpoint: Basic with its charset (RFC 7617
   * §2.1), preceded by `Negotiate` (RFC 4559 §4.1) when SPNEGO is on.
   */
  challenge(): string {
    const basic = `Basic realm="${REALM}", charset="UTF-8"`;
    return this.negotiates ? `Negotiate, ${basic}` : basic;
  }

  /** What a refused client should send instead, for the error body. */
  schemes(): string {
    const basic = "send an application key as 'Authorization: Basic <base64 of client-id:secret>'";
    return this.negotiates
      ? `${basic}, or a Kerberos ticket as 'Authorization: Negotiate <SPNEGO token>'.`
      : `${basic}.`;
  }

  /**
   * Admits one token request from `ip` (Fastify's `request.ip`): takes from the address's bucket
   * and returns the address key to settle with. Throws TooManyAttemptsError when the address is
   * over its rate or locked out.
   */
  admit(ip: string): string {
    const key = addressKey(ip);
    const refusal = this.limits.addresses.take(key);
    if (refusal !== undefined) throw new TooManyAttemptsError(refusal, "address");
    return key;
  }

  /**
   * Counts the outcome against the address from `admit`: a failure (credentials were sent and
   * refused) towards its lockout, a success clears its count. A request that sent no credentials
   * (the first leg of a Negotiate exchange) counts as neither.
   */
  settle(address: string, result: ClientAuthResult | undefined): void {
    if (result === undefined) return;
    if (result.ok) this.limits.addresses.succeed(address);
    else this.limits.addresses.fail(address);
  }

  /**
   * Checks an application key: the client id and secret must match a configured key. A secret
   * verified recently passes at once; otherwise a configured client id must be within its rate and
   * not locked out (TooManyAttemptsError), and the secret costs a scrypt (which may reject with
   * WorkQueueFullError). When `oauth` is set, Basic credentials that fail as sent are retried
   * form-decoded, since RFC 6749 §2.3.1 asks OAuth clients to form-encode both before Base64 and
   * only some clients do.
   */
  async appKey(clientId: string, secret: string, oauth = false): Promise<ClientAuthResult> {
    const { appKeys } = this;
    const decodedId = oauth ? formDecode(clientId) : clientId;
    const decodedSecret = oauth ? formDecode(secret) : secret;
    const variants: [string, string][] = [[clientId, secret]];
    if (decodedId !== clientId || decodedSecret !== secret) variants.push([decodedId, decodedSecret]);
    for (const [id, key] of variants) {
      if (appKeys.recall(id, key)) return { ok: true, sub: id, method: "app-key" };
    }
    for (const [id] of variants) {
      if (!appKeys.has(id)) continue;
      const refusal = this.limits.clients.take(id);
      if (refusal !== undefined) throw new TooManyAttemptsError(refusal, "client");
    }
    for (const [id, key] of variants) {
      if (await appKeys.authenticate(id, key)) {
        this.limits.clients.succeed(id);
        return { ok: true, sub: id, method: "app-key" };
      }
    }
    for (const [id] of variants) if (appKeys.has(id)) this.limits.clients.fail(id);
    return { ok: false, reason: "unknown client id or wrong secret" };
  }

  /** Accepts a SPNEGO token (through the work limiter); the subject is the client principal. */
  async negotiate(token: string): Promise<ClientAuthResult> {
    const { kerberos } = this;
    if (kerberos.state === "disabled") return { ok: false, reason: "Kerberos is not enabled in the setup" };
    const result = await this.limiter.run(() => kerberos.acceptor.accept(token));
    if (!result.ok) return result;
    return {
      ok: true,
      sub: result.principal,
      method: "kerberos",
      ...(result.response === undefined ? {} : { negotiateResponse: result.response }),
    };
  }

  /**
   * Authenticates the credentials of an `Authorization` header at `GET /token` and `GET /authorize`:
   * Basic with a configured application key, or Negotiate with a Kerberos ticket when SPNEGO is on.
   * Returns undefined when the header is missing.
   */
  async header(credentials: Credentials): Promise<ClientAuthResult | undefined> {
    switch (credentials.kind) {
      case "basic":
        return this.appKey(credentials.user, credentials.password);
      case "negotiate":
        return this.negotiate(credentials.token);
      case "bearer":
        return { ok: false, reason: "a bearer token cannot obtain a token; send client credentials" };
      case "none":
        return undefined;
      case "malformed":
        return { ok: false, reason: credentials.reason };
    }
  }
}
