/**
 * Kerberos SPNEGO for the token endpoints (DESIGN 5.4; seed "Authentication" A.4; RFC 4559). The
 * client sends `Authorization: Negotiate <base64 GSS token>`; the hub accepts it with the service
 * key from the setup's keytab through the `kerberos` npm package (MIT GSSAPI underneath), and the
 * token's `sub` is the client principal (`user@REALM`).
 *
 * The binding is an optional dependency: an install without Kerberos headers has none. A setup
 * that enables Kerberos then stops the hub's start (and fails `vigil validate`) with
 * {@link KERBEROS_BINDING_FIX}: a setting that is accepted must be in force.
 *
 * Choices (docs/security.md):
 * - `servicePrincipal` `HTTP/<host>@<REALM>` is accepted as the GSS host-based name `HTTP@<host>`
 *   (MIT matches it against the keytab's `HTTP/<host>@…` keys), and then only client principals of
 *   `<REALM>` are let in: a ticket from another realm that shares the keytab, or reached by a
 *   cross-realm trust, is refused. Written `HTTP@<host>`, any realm the keytab accepts is let in.
 * - The binding takes no keytab argument, so the keytab is named through `KRB5_KTNAME` of this
 *   process; one process serves one keytab.
 * - One round trip only (Kerberos through SPNEGO needs no more); a mechanism that asks for another
 *   leg (NTLM) is refused.
 */
import { createRequire } from "node:module";
import type { HubSetup } from "../../config/setup.js";

type KerberosSetup = HubSetup["security"]["kerberos"];

/** The part of the `kerberos` package's server context that the hub uses. */
interface KerberosServer {
  readonly username: string;
  readonly response: string | null;
  readonly contextComplete: boolean;
  step(challenge: string): Promise<unknown>;
}

interface KerberosBinding {
  initializeServer(service: string): Promise<KerberosServer>;
}

/** The binding, or why it did not load. */
export type BindingLoad =
  | { readonly ok: true; readonly binding: KerberosBinding }
  | { readonly ok: false; readonly reason: string };

let loaded: BindingLoad | undefined;

/** What makes the binding load, for the errors that name it (docs/security.md, README). */
export const KERBEROS_BINDING_FIX =
  "install the Kerberos development headers (Debian/Ubuntu: apt-get install libkrb5-dev; " +
  "Red Hat: krb5-devel) and run npm ci again, or set hub.security.kerberos.enabled: false";

/**
 * Why a setup that enables Kerberos cannot be served: the binding did not load (`reason`), with
 * the fix; used by the hub's start and by `vigil validate`.
 */
export function kerberosBindingError(reason: string): string {
  return `hub.security.kerberos is enabled but ${reason}: ${KERBEROS_BINDING_FIX}`;
}

/**
 * Loads the optional `kerberos` package once. Resolves to why it failed (not installed, or its
 * native part did not build or cannot find libgssapi_krb5) instead of throwing.
 */
export function loadKerberosBinding(): BindingLoad {
  if (loaded !== undefined) return loaded;
  try {
    const binding = createRequire(import.meta.url)("kerberos") as Partial<KerberosBinding>;
    if (typeof binding.initializeServer !== "function") {
      loaded = { ok: false, reason: "the kerberos package has no initializeServer()" };
    } else {
      loaded = { ok: true, binding: binding as KerberosBinding };
    }
  } catch (error) {
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    loaded = { ok: false, reason: `the optional kerberos package did not load (${message})` };
  }
  return loaded;
}

/** A service principal of the setup, as GSSAPI wants it and with the realm its clients must have. */
export interface ServiceName {
  /** Host-based service name `HTTP@<host>` (RFC 2743 §4.1). */
  readonly gssName: string;
  /** Realm client principals must belong to; undefined when the setup wrote `HTTP@<host>`. */
  readonly realm: string | undefined;
}

/**
 * Reads `HTTP/<host>@<REALM>` or `HTTP@<host>` (the forms DESIGN 5.4 allows; `vigil validate`
 * refuses others). Returns undefined for anything else.
 */
export function parseServicePrincipal(principal: string): ServiceName | undefined {
  const full = /^([^/@\s]+)\/([^@/\s]+)@([^@/\s]+)$/.exec(principal);
  if (full !== null) return { gssName: `${full[1]}@${full[2]}`, realm: full[3] };
  const hostBased = /^([^/@\s]+)@([^@/\s]+)$/.exec(principal);
  if (hostBased !== null) return { gssName: principal, realm: undefined };
  return undefined;
}

/** The outcome of accepting one Negotiate token. */
export type NegotiateResult =
  | { readonly ok: true; readonly principal: string; readonly response: string | undefined }
  | { readonly ok: false; readonly reason: string };

/** Accepts SPNEGO tokens for the hub's service principal. */
export interface KerberosAcceptor {
  readonly service: ServiceName;
  /** Accepts one `Negotiate` token; never throws for a bad token, only reports why. */
  accept(token: string): Promise<NegotiateResult>;
}

/** Whether SPNEGO is on (there is no third state: an enabled setup that cannot be served stops the start). */
export type KerberosState =
  | { readonly state: "disabled" }
  | { readonly state: "on"; readonly acceptor: KerberosAcceptor };

/**
 * The realm of a principal as GSSAPI displays it (`name[/instance]@REALM`, RFC 1964 §2.1.1): what
 * follows the last `@` not escaped by a backslash; undefined when there is none.
 */
export function realmOf(principal: string): string | undefined {
  for (let at = principal.lastIndexOf("@"); at > 0; at = principal.lastIndexOf("@", at - 1)) {
    let backslashes = 0;
    while (principal[at - 1 - backslashes] === "\\") backslashes++;
    if (backslashes % 2 === 0) return principal.slice(at + 1);
  }
  return undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Sets up SPNEGO from the setup: `disabled` when `kerberos.enabled` is false; otherwise `on`,
 * with `KRB5_KTNAME` pointing at the keytab. It then tries to acquire the service credentials once
 * and reports a failure (no keytab, no key for the principal) through `warn`, staying `on`, since
 * the keytab may be put in place later. Throws, stopping the hub's start, when Kerberos is enabled
 * but the binding cannot load ({@link kerberosBindingError}) or the service principal is unreadable.
 */
export async function setUpKerberos(
  setup: KerberosSetup,
  warn: (message: string) => void,
  binding: BindingLoad = loadKerberosBinding(),
): Promise<KerberosState> {
  if (!setup.enabled) return { state: "disabled" };
  if (!binding.ok) throw new Error(kerberosBindingError(binding.reason));
  const service = parseServicePrincipal(setup.servicePrincipal);
  if (service === undefined) {
    throw new Error(
      `hub.security.kerberos.servicePrincipal '${setup.servicePrincipal}' is not a service principal; write HTTP/<host>@<REALM>`,
    );
  }
  // The GSSAPI acceptor reads its keytab from KRB5_KTNAME (MIT krb5 `krb5_kt_default_name`); the
  // binding offers no other way to name it.
  process.env.KRB5_KTNAME = `FILE:${setup.keytab}`;
  const { initializeServer } = binding.binding;
  try {
    await initializeServer(service.gssName);
  } catch (error) {
    warn(
      `Kerberos: cannot acquire the credentials of ${setup.servicePrincipal} from keytab ${setup.keytab} ` +
        `(${messageOf(error)}); Negotiate requests fail until the keytab holds its key`,
    );
  }
  const acceptor: KerberosAcceptor = {
    service,
    async accept(token) {
      let server: KerberosServer;
      try {
        server = await initializeServer(service.gssName);
        await server.step(token);
      } catch (error) {
        return { ok: false, reason: `Kerberos: ${messageOf(error)}` };
      }
      if (!server.contextComplete) return { ok: false, reason: "SPNEGO needs another leg (not Kerberos)" };
      const principal = server.username;
      if (realmOf(principal) === undefined) {
        return { ok: false, reason: "Kerberos accepted a ticket without a client principal" };
      }
      if (service.realm !== undefined && realmOf(principal) !== service.realm) {
        return { ok: false, reason: `client principal ${principal} is not of realm ${service.realm}` };
      }
      return { ok: true, principal, response: server.response ?? undefined };
    },
  };
  return { state: "on", acceptor };
}
