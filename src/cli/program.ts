/**
 * The `vigil` command (DESIGN 1), loaded by main.ts once the process runs with the V8 bounds it
 * needs. Each subcommand lives in commands/<name>.ts.
 */
import { Command } from "commander";
import { formatSetupIssues, SetupError } from "../config/load-setup.js";
import { VIGIL_VERSION } from "../version.js";
import { registerEntities } from "./commands/entities.js";
import { registerGateway } from "./commands/gateway.js";
import { registerHub } from "./commands/hub.js";
import { registerProbe } from "./commands/probe.js";
import { registerQuery } from "./commands/query.js";
import { registerReplay } from "./commands/replay.js";
import { registerToken } from "./commands/token.js";
import { registerUp } from "./commands/up.js";
import { registerValidate } from "./commands/validate.js";

const program = new Command("vigil")
  .description("monitoring data platform: rest-api probe, gateway publishing public-v2, hub query API")
  .version(VIGIL_VERSION);
registerUp(program);
registerProbe(program);
registerGateway(program);
registerHub(program);
registerValidate(program);
registerToken(program);
registerEntities(program);
registerQuery(program);
registerReplay(program);

program.parseAsync(process.argv).catch((error: unknown) => {
  // A command's failure is reported in one readable message, never a stack trace.
  const text =
    error instanceof SetupError
      ? formatSetupIssues(error)
      : error instanceof Error
        ? error.message
        : String(error);
  process.stderr.write(`vigil: ${text}\n`);
  process.exitCode = 1;
});
