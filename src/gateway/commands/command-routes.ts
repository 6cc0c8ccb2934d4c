/**
 * The gateway's command API (DESIGN 4.2): `POST /v1/commands/snooze | unsnooze | assign |
 * unassign` and `GET /v1/items`. A command is applied to the severity engine, its state written to
 * the state file (so a 200 survives a `kill -9`), and then its messages are published; the answer
 * is the item's new state. An unknown item is 404 `ITEM_NOT_FOUND`, a command that does not apply
 * 409 `COMMAND_NOT_APPLICABLE`, a malformed one 400 `INVALID_COMMAND` naming the field.
 */
import type { FastifyInstance } from "fastify";
import { VigilError } from "../../errors/catalog.js";
import { resource } from "../../http/routes.js";
import type { PublicV2Message } from "../../messages/types.js";
import { CommandRefused, type SeverityEngine } from "../severity/severity-engine.js";
import { parseAssign, parseRelease, parseSnooze, parseTarget } from "./command-body.js";

export interface CommandRoutesOptions {
  readonly engine: SeverityEngine;
  readonly gateway: () => string;
  readonly publish: (messages: readonly PublicV2Message[]) => void;
  /** Writes the engine's state to disk; resolves once it is there. */
  readonly persist: () => Promise<void>;
  /** Epoch ms (a test's controllable clock, else Date.now). */
  readonly clock: () => number;
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
  resource(http, "/v1/commands/snooze", {
    POST: async (request) => {
      const { target, command } = parseSnooze(request.body);
      return apply(() => engine.snooze(target, command, options.clock()));
    },
  });
  resource(http, "/v1/commands/unsnooze", {
    POST: async (request) => {
      const { target, user, comment } = parseRelease(request.body);
      return apply(() => engine.unsnooze(target, user, comment, options.clock()));
    },
  });
  resource(http, "/v1/commands/assign", {
    POST: async (request) => {
      const { target, command } = parseAssign(request.body);
      return apply(() => engine.assign(target, command, options.clock()));
    },
  });
  resource(http, "/v1/commands/unassign", {
    POST: async (request) => {
      const { target, user, comment } = parseRelease(request.body);
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
