/**
 * Trusting a server by the certificate the setup names for it (`hub.tls.certificate` for the
 * gateway's token checks, `gateway.tls.certificate` for a probe's link), which is often self-signed
 * or issued by a private CA: that exact certificate is accepted (its SHA-256 fingerprint, whatever
 * host name the client used), and otherwise any certificate the public CAs vouch for, for the URL's
 * host. The pinned certificate vouches for itself only: one it issued (when it is a CA) is refused.
 * The check runs in the TLS handshake, before a byte of the request is sent.
 */
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  checkServerIdentity,
  type DetailedPeerCertificate,
  type PeerCertificate,
  rootCertificates,
} from "node:tls";

/** TLS client options for `https.request`, `tls.connect` or a `ws` client. */
export interface PinnedTrust {
  readonly ca?: string[];
  readonly allowPartialTrustChain?: boolean;
  readonly checkServerIdentity?: (host: string, cert: PeerCertificate) => Error | undefined;
}

/**
 * Options that trust `certificate` (PEM text) besides the public CAs; none (the public CAs alone)
 * when it is undefined or not a certificate.
 */
export function trustCertificate(certificate: string | undefined): PinnedTrust {
  if (certificate === undefined) return {};
  let pinned: string;
  try {
    pinned = new X509Certificate(certificate).fingerprint256;
  } catch {
    return {};
  }
  return {
    // The pinned certificate is a trust anchor of its own, even when a private CA issued it.
    ca: [...rootCertificates, certificate],
    allowPartialTrustChain: true,
    checkServerIdentity: (host, cert) => {
      if (cert.fingerprint256 === pinned) return undefined;
      if (issuedUnder(cert, pinned))
        return new Error(
          `the server at ${host} presented a certificate that is neither the configured certificate nor one a public CA vouches for`,
        );
      return checkServerIdentity(host, cert);
    },
  };
}

/** Whether a certificate above `cert` in its verified chain has the fingerprint `pinned`. */
function issuedUnder(cert: PeerCertificate, pinned: string): boolean {
  const seen = new Set<string>([cert.fingerprint256]);
  let issuer = (cert as DetailedPeerCertificate).issuerCertificate as DetailedPeerCertificate | undefined;
  while (issuer !== undefined && !seen.has(issuer.fingerprint256)) {
    if (issuer.fingerprint256 === pinned) return true;
    seen.add(issuer.fingerprint256);
    issuer = issuer.issuerCertificate as DetailedPeerCertificate | undefined;
  }
  return false;
}

/** A certificate file's text, or undefined when it cannot be read (the public CAs alone are then trusted). */
export function readableCertificate(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}
