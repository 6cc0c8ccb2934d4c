/**
 * The gateway's command API (DESIGN 4.2): `POST /v1/commands/snooze | unsnooze | assign |
 * unassign` and `GET /v1/items`. A command is applied to the severity engine, its state written to
 * the state file (so a 200 survives a `kill -9`), and then its messages are published; the answer
 * is the item's new state. An unknown item is 404 `ITEM_NOT_FOUND`, a command that does not apply
 * 409 `COMMAND_NOT_APPLICABLE`, a malformed one 400 `INVALID_COMMAND` naming the field.
 *
 * Every command is logged with the body's `user` (the person acting) and, when security is on, the
 * `sub` of the token that sent it (DESIGN 5.4a); snooze and assign keep that `sub` in the item's
 * state (`snoozedBySubject`, `assignedBySubject`), which the published messages do not carry.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { VigilError } from "../../errors/catalog.js";
import { resource } from "../../http/routes.js";
import type { PublicV2Message } from "../../messages/types.js";
import { CommandRefused } from "../severity/item-commands.js";
import type { SeverityEngine } from "../severity/severity-engine.js";
import { parseAssign, parseRelease, parseSnooze, parseTarget } from "./command-body.js";

/** What the routes need of the severity stage: its commands and item views. */
export type ItemCommandsStage = Pick<SeverityEngine, "snooze" | "unsnooze" | "assign" | "unassign" | "items">;

export interface CommandRoutesOptions {
  readonly engine: ItemCommandsStage;
  readonly gateway: () => string;
  readonly publish: (messages: readonly PublicV2Message[]) => void;
  /** Writes the engine's state to disk; resolves once it is there. */
  readonly persist: () => Promise<void>;
  /** Epoch ms (a test's controllable clock, else Date.now). */
  readonly clock: () => number;
  /** The `sub` of the token a request was authorised with; undefined with security off. */
  readonly subject: (request: FastifyRequest) => string | undefined;
}

function answer<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof CommandRefused) {
      throw error.reason === "not-found"
        ? new VigilError("ITEM_NOT_FOUND", { detail: error.message }, { cause: error })
        : new VigilError("COMMAND_NOT_APPLICABLE", { detail: error.message }, { cause: error });
    }
    throw error;
  }
}

export function registerCommandRoutes(http: FastifyInstance, options: CommandRoutesOptions): void {
  const { engine } = options;
  const apply = async (run: () => { view: unknown; messages: PublicV2Message[] }) => {
    const { view, messages } = answer(run);
    await options.persist();
    options.publish(messages);
    return view;
  };
  /** Logs who sent a command: the body's user beside the token's subject. */
  const who = (request: FastifyRequest, command: string, user: string) => {
    const sub = options.subject(request);
    request.log.info({ command, user, ...(sub === undefined ? {} : { sub }) }, "gateway command");
    return sub === undefined ? {} : { subject: sub };
  };
  resource(http, "/v1/commands/snooze", {
    POST: async (request) => {
      const { target, command } = parseSnooze(request.body);
      const subject = who(request, "snooze", command.user);
      return apply(() => engine.snooze(target, { ...command, ...subject }, options.clock()));
    },
  });
  resource(http, "/v1/commands/unsnooze", {
    POST: async (request) => {
      const { target, user, comment } = parseRelease(request.body);
      who(request, "unsnooze", user);
      return apply(() => engine.unsnooze(target, user, comment, options.clock()));
    },
  });
  resource(http, "/v1/commands/assign", {
    POST: async (request) => {
      const { target, command } = parseAssign(request.body);
      const subject = who(request, "assign", command.user);
      return apply(() => engine.assign(target, { ...command, ...subject }, options.clock()));
    },
  });
  resource(http, "/v1/commands/unassign", {
    POST: async (request) => {
      const { target, user, comment } = parseRelease(request.body);
      who(request, "unassign", user);
      return apply(() => engine.unassign(target, user, comment, options.clock()));
    },
  });
  resource(http, "/v1/items", {
    GET: async (request) => {
      const target = parseTarget(request.query ?? {}, "", options.gateway());
      return answer(() => engine.items(target));
    },
  });
}
