/**
 * Listening addresses (docs/decisions.md): `vigil up` and a standalone hub, gateway and probe listen
 * on the loopback address until `--host` names an interface (`--host 0.0.0.0` for every one), so a
 * part started without thought is not reachable from the network. Every server command takes `--host`.
 */
export const LOOPBACK = "127.0.0.1";
