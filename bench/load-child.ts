/**
 * The client side of `loadInChild()` (bench/load.ts): receives one plan over IPC, runs it with
 * `load()` in this process, sends the result back and exits. Not a benchmark by itself.
 */
import { type ChildLoadRequest, load } from "./load.js";

process.once("message", (message) => {
  const { plan, options } = message as ChildLoadRequest;
  const cpu = process.cpuUsage();
  load(plan, options).then(
    (result) => {
      const used = process.cpuUsage(cpu);
      const clientCpuSeconds = (used.user + used.system) / 1e6;
      process.send?.({ ...result, clientCpuSeconds }, () => process.disconnect());
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
});
