/**
 * Roles (DESIGN 5.4a): what a hub token lets its bearer do. Every application key has roles
 * (default `[read]`), every Kerberos principal has `hub.security.kerberosRoles` (default `[read]`),
 * and an access token carries them in its `roles` claim. Shared by the hub and every process that
 * checks hub tokens, so it imports nothing from the hub.
 *
 * - `read`: the query API, status and metrics endpoints, the gateway's items and message tap;
 * - `write`: backfill (`POST /v0/messages`);
 * - `operate`: the gateway's commands (snooze, assign, and their reverse).
 */
import { VigilError } from "../errors/catalog.js";

/** Every role, in the order they are listed. */
export const ROLES = ["read", "write", "operate"] as const;
export type Role = (typeof ROLES)[number];

/** Roles of an application key without `roles`, and of Kerberos principals by default. */
export const DEFAULT_ROLES: readonly Role[] = ["read"];

/** Whether `value` names a role. */
export function isRole(value: unknown): value is Role {
  return typeof value === "string" && (ROLES as readonly string[]).includes(value);
}

/**
 * The `roles` claim of a verified token payload: a non-empty list of distinct roles. Throws when
 * the claim is missing or holds anything else, so a token without valid roles is refused (a token
 * signed before roles existed has none).
 */
export function rolesClaim(payload: { readonly [claim: string]: unknown }): readonly Role[] {
  const roles = payload.roles;
  if (!Array.isArray(roles) || roles.length === 0) throw new Error("token has no 'roles' claim");
  if (!roles.every(isRole) || new Set(roles).size !== roles.length) {
    throw new Error("token's 'roles' claim is not a list of distinct roles");
  }
  return roles;
}

/** What a verified access token says about its bearer. */
export interface TokenGrant {
  readonly sub: string;
  /** The roles the bearer holds now (the token's, limited to those its key still has). */
  readonly roles: readonly Role[];
  /** When the token expires, epoch milliseconds. */
  readonly expiresAt: number;
}

/** The roles in both lists, in `ROLES` order. */
export function commonRoles(a: readonly Role[], b: readonly Role[]): Role[] {
  return ROLES.filter((role) => a.includes(role) && b.includes(role));
}

/**
 * Throws the catalog's 403 FORBIDDEN when `grant` lacks `role`; the body names the role needed
 * and the roles the token has, and the challenge says `insufficient_scope` with the role as the
 * scope (RFC 6750 §3.1).
 */
export function demandRole(grant: TokenGrant, role: Role): void {
  if (grant.roles.includes(role)) return;
  throw new VigilError(
    "FORBIDDEN",
    {
      role,
      sub: grant.sub,
      roles: grant.roles.length === 0 ? "none" : grant.roles.map((r) => `'${r}'`).join(", "),
    },
    { headers: { "WWW-Authenticate": `Bearer realm="vigil", error="insufficient_scope", scope="${role}"` } },
  );
}
