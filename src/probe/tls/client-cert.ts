/**
 * Client-certificate chain verification for per-sampler mTLS (DESIGN 3.5). The probe's one HTTPS
 * server asks every client for a certificate without requiring it (`requestCert: true,
 * rejectUnauthorized: false`), because each sampler trusts its own CA file; the TLS handshake has
 * already proved that the client holds the private key of the certificate it sent. What is left,
 * done here per request, is the path check of RFC 5280 §6 in the subset a private CA needs:
 *
 * - the leaf and every certificate above it are inside their validity period;
 * - each certificate is issued by the next (`checkIssued`: issuer name and key identifiers) and its
 *   signature verifies with the next one's public key;
 * - every issuer, intermediate or trust anchor, is a CA (basicConstraints CA:TRUE);
 * - the leaf, when it has an extended key usage, allows clientAuth (or anyExtendedKeyUsage);
 * - the path ends at a certificate of the sampler's CA file (the trust anchors), within
 *   {@link MAX_CHAIN_DEPTH} issuers. Intermediates come from what the client sent.
 *
 * Not checked: revocation (CRL/OCSP), name and policy constraints, pathLenConstraint.
 */
import { X509Certificate } from "node:crypto";
import type { DetailedPeerCertificate, TLSSocket } from "node:tls";

/** Issuers followed above the leaf before giving up; real client chains have one or two. */
export const MAX_CHAIN_DEPTH = 8; // certificates

const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
const ANY_EXTENDED_KEY_USAGE = "2.5.29.37.0";

export type ChainResult =
  | { readonly ok: true; readonly anchor: X509Certificate }
  | { readonly ok: false; readonly reason: string };

/**
 * Whether `presented` (the client's leaf first, then whatever intermediates it sent, in any order)
 * chains to one of `anchors` at time `now` (epoch ms); the reason when it does not.
 */
export function verifyClientChain(
  presented: readonly X509Certificate[],
  anchors: readonly X509Certificate[],
  now: number,
): ChainResult {
  const leaf = presented[0];
  if (leaf === undefined) return { ok: false, reason: "no client certificate was sent" };
  const leafProblem = validityProblem(leaf, now, "the client certificate");
  if (leafProblem !== undefined) return { ok: false, reason: leafProblem };
  const usage = leaf.keyUsage; // extended key usage OIDs; undefined when the extension is absent
  if (usage !== undefined && !usage.includes(CLIENT_AUTH) && !usage.includes(ANY_EXTENDED_KEY_USAGE)) {
    return {
      ok: false,
      reason: "the client certificate's extended key usage does not allow client authentication",
    };
  }
  if (anchors.length === 0) return { ok: false, reason: "no trusted CA certificate is configured" };

  const intermediates = presented.slice(1);
  const used = new Set<X509Certificate>();
  let current = leaf;
  for (let depth = 0; depth < MAX_CHAIN_DEPTH; depth++) {
    const anchor = anchors.find((candidate) => issues(candidate, current, now));
    if (anchor !== undefined) return { ok: true, anchor };
    const next = intermediates.find((candidate) => !used.has(candidate) && issues(candidate, current, now));
    if (next === undefined) break;
    used.add(next);
    current = next;
  }
  return {
    ok: false,
    reason: `the client certificate (subject ${oneLine(leaf.subject)}, issuer ${oneLine(leaf.issuer)}) does not chain to a trusted CA`,
  };
}

/** Whether `issuer` is a valid CA at `now` that issued and signed `subject`. */
function issues(issuer: X509Certificate, subject: X509Certificate, now: number): boolean {
  if (!issuer.ca || validityProblem(issuer, now, "") !== undefined) return false;
  if (!subject.checkIssued(issuer)) return false;
  try {
    return subject.verify(issuer.publicKey);
  } catch {
    return false; // a key type the signature cannot be checked with
  }
}

/** Why `cert` is not valid at `now`, or undefined. */
function validityProblem(cert: X509Certificate, now: number, what: string): string | undefined {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  if (!Number.isFinite(from) || !Number.isFinite(to)) return `${what} has unreadable validity dates`;
  if (now < from) return `${what} is not valid before ${cert.validFrom}`;
  if (now > to) return `${what} expired on ${cert.validTo}`;
  return undefined;
}

/**
 * The certificates a TLS client sent, leaf first, as Node reports them (`getPeerCertificate(true)`
 * follows `issuerCertificate` links; the last one points at itself). [] when it sent none. At most
 * {@link MAX_CHAIN_DEPTH} + 1 are taken.
 */
export function peerChain(socket: TLSSocket): X509Certificate[] {
  const chain: X509Certificate[] = [];
  // `{}` when the client sent no certificate, so `raw` may be missing whatever the type says.
  let peer: Partial<DetailedPeerCertificate> | undefined = socket.getPeerCertificate(true);
  const seen = new Set<unknown>();
  while (peer?.raw !== undefined && !seen.has(peer) && chain.length <= MAX_CHAIN_DEPTH) {
    seen.add(peer);
    chain.push(new X509Certificate(peer.raw));
    peer = peer.issuerCertificate;
  }
  return chain;
}

/** Every certificate of a PEM text, in order; throws when there is none or one does not parse. */
export function parsePemCertificates(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error("no PEM certificate (-----BEGIN CERTIFICATE-----) found");
  return blocks.map((block, index) => {
    try {
      return new X509Certificate(block);
    } catch (cause) {
      throw new Error(`certificate ${index + 1} does not parse`, { cause });
    }
  });
}

/** A distinguished name on one line (Node prints one attribute per line). */
function oneLine(name: string): string {
  return `'${name.trim().split("\n").join(", ")}'`;
}
