/**
 * Listening addresses (issue 6, DESIGN 1): a standalone probe, gateway or hub listens on every
 * interface by default, as a real probe does, so parts on other hosts can reach it; `vigil up`, which
 * holds all parts in one process, keeps the loopback address. Every server command takes `--host`.
 */
export const ALL_INTERFACES = "0.0.0.0";
export const LOOPBACK = "127.0.0.1";
