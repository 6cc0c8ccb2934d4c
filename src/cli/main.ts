#!/usr/bin/env node
/**
 * The `vigil` executable. A long-running command first makes sure its process runs with a bounded
 * young generation (young-generation.ts), which may start the process again in place, before the
 * command itself is loaded (program.ts).
 */
import { boundYoungGeneration } from "./young-generation.js";

boundYoungGeneration();
await import("./program.js");
