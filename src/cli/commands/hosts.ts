/**
 * Listening addresses (DESIGN 1, docs/decisions.md): a standalone hub listens on every interface by
 * default (its API needs a token); a standalone gateway and probe, and `vigil up`, listen on the
 * loopback address until `--host` names an interface (`--host 0.0.0.0` for every one), so a part
 * started without thought is not reachable from the network. Every server command takes `--host`.
 */
export const ALL_INTERFACES = "0.0.0.0";
export const LOOPBACK = "127.0.0.1";
