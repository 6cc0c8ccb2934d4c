/**
 * Skips that CI does not allow. A test that needs a service (NATS, PostgreSQL, a KDC, Chromium,
 * openssl, a private nats-server, a tmpfs mount) skips with a clear reason when run by hand without
 * it; with `CI=true` (as `.ci/run` runs) the same missing service fails the file instead, since
 * `scripts/services.sh` installs and starts all of them and a green run must not hide a skipped test.
 */

/** `reason` as a `skip` option, or a thrown error naming it when CI=true; `false` (or "") runs. */
export function needs(reason: string | false | undefined): string | false {
  if (reason === undefined || reason === false || reason === "") return false;
  if (process.env.CI === "true")
    throw new Error(`CI=true, and this test cannot run: ${reason} (scripts/services.sh start installs it)`);
  return reason;
}
