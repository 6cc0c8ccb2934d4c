/**
 * The hub URL and credentials of the client commands, from flags or environment variables
 * (commander reads the variables, so a flag overrides its variable field by field):
 *
 * | flag              | variable              |
 * |-------------------|-----------------------|
 * | `--hub URL`       | `VIGIL_HUB_URL`       |
 * | `--token T`       | `VIGIL_TOKEN`         |
 * | `--client-id ID`  | `VIGIL_CLIENT_ID`     |
 * | `--client-secret` | `VIGIL_CLIENT_SECRET` |
 *
 * A token, when given, is used as is; otherwise the client id and secret get one from `GET /token`;
 * with neither, requests go without `Authorization` (a hub with security off). `vigil token` itself
 * always uses the id and secret.
 */
import { type Command, Option } from "commander";
import { HubClient, type HubCredentials } from "./hub-client.js";

export interface ConnectionFlags {
  hub?: string;
  token?: string;
  clientId?: string;
  clientSecret?: string;
}

/** Adds `--hub`, `--client-id`, `--client-secret` and (unless `withToken` is false) `--token`. */
export function addConnectionOptions(command: Command, withToken = true): Command {
  command
    .addOption(new Option("--hub <url>", "hub base URL, http://HOST:8081").env("VIGIL_HUB_URL"))
    .addOption(new Option("--client-id <id>", "application key: client id").env("VIGIL_CLIENT_ID"))
    .addOption(
      new Option(
        "--client-secret <secret>",
        "application key: secret (prefer the variable: a command line is visible to other users)",
      ).env("VIGIL_CLIENT_SECRET"),
    );
  if (withToken) {
    command.addOption(
      new Option("--token <token>", "bearer token, used instead of the application key").env("VIGIL_TOKEN"),
    );
  }
  return command;
}

/** The credentials the flags and variables give; an id without a secret (or the reverse) is an error. */
export function credentialsFrom(flags: ConnectionFlags, useToken = true): HubCredentials {
  if (useToken && flags.token !== undefined && flags.token !== "")
    return { kind: "token", token: flags.token };
  const id = flags.clientId ?? "";
  const secret = flags.clientSecret ?? "";
  if (id !== "" && secret !== "") return { kind: "client", clientId: id, clientSecret: secret };
  if (id !== "") throw new Error("--client-id needs --client-secret (or VIGIL_CLIENT_SECRET)");
  if (secret !== "") throw new Error("--client-secret needs --client-id (or VIGIL_CLIENT_ID)");
  return { kind: "none" };
}

/** A client for the flags and variables; the hub URL is required. */
export function clientFrom(flags: ConnectionFlags, useToken = true): HubClient {
  if (flags.hub === undefined || flags.hub === "") {
    throw new Error("which hub? give --hub http://HOST:8081 or set VIGIL_HUB_URL");
  }
  return new HubClient({ url: flags.hub, credentials: credentialsFrom(flags, useToken) });
}
