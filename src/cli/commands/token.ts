/**
 * `vigil token` (DESIGN 1, 5.4): gets a bearer token from the hub's `GET /token` with the
 * application key, and prints the access token alone, so `export VIGIL_TOKEN=$(vigil token)` works;
 * `--json` prints the hub's whole answer (`access_token`, `token_type`, `refresh_token`, `expires`).
 */
import type { Command } from "commander";
import { addConnectionOptions, type ConnectionFlags, clientFrom } from "../client/connection-options.js";
import type { HubClient } from "../client/hub-client.js";

/** What `vigil token` prints: the access token, or the whole answer as JSON. */
export async function tokenText(client: HubClient, json: boolean): Promise<string> {
  const token = await client.token();
  return json ? JSON.stringify(token, null, 2) : token.access_token;
}

/** Adds `token [--json]` with the hub URL and application key from flags or VIGIL_* variables. */
export function registerToken(program: Command): void {
  const command = program
    .command("token")
    .description("get a bearer token from the hub with an application key (client id and secret)")
    .option("--json", "print the hub's whole answer as JSON");
  addConnectionOptions(command, false).action(async (options: ConnectionFlags & { json?: boolean }) => {
    process.stdout.write(`${await tokenText(clientFrom(options, false), options.json === true)}\n`);
  });
}
