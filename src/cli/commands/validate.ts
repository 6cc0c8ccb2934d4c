/** `vigil validate --config FILE`: the setup editor's check (DESIGN 1): every error, exit 1. */
import type { Command } from "commander";
import { formatSetupIssues, loadSetupFile, SetupError } from "../../config/load-setup.js";

export function registerValidate(program: Command): void {
  program
    .command("validate")
    .description("check a setup file and print every configuration error")
    .requiredOption("--config <file>", "setup file (YAML)")
    .action((options: { config: string }) => {
      try {
        loadSetupFile(options.config);
        process.stdout.write(`${options.config}: OK\n`);
      } catch (error) {
        if (!(error instanceof SetupError)) throw error;
        process.stderr.write(`${formatSetupIssues(error)}\n`);
        process.exitCode = 1;
      }
    });
}
