/**
 * The gateway's bearer-token check (DESIGN 5.4) lives in `src/auth/bearer.ts`, shared with every
 * process that verifies hub tokens; this file keeps the gateway's import path. The gateway imports
 * nothing from `src/hub/`.
 */
export {
  type BearerRule,
  bearerToken,
  hubTokenVerifier,
  requireBearer,
  type TokenVerifier,
  tokenExpiresAt,
  tokenGrant,
} from "../auth/bearer.js";
