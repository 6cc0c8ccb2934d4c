/**
 * Where the time goes in a V8 CPU profile (`node --cpu-prof`, e.g. the children of
 * bench/end-to-end.bench.ts run with VIGIL_BENCH_CPU_PROF=DIR): self time per function and per
 * place (a dist/ file of vigil, an npm package, node's internals, GC, idle), as percentages of the
 * profiled time, then total time (the function and what it called) per function. Not a benchmark:
 * `node --import tsx bench/profile-summary.ts FILE.cpuprofile [TOP [FROM_S [TO_S]]]`; FROM_S and TO_S
 * keep only the samples taken that many seconds after the profile started (e.g. a bench's query
 * after its load).
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The place a frame belongs to: `pkg:<name>`, a vigil dist/src path, `node:<module>`, or a V8 bucket. */
function place(frame: ProfileNode["callFrame"]): string {
  const { url, functionName } = frame;
  if (url === "") return `(${functionName || "native"})`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg !== null) return `pkg:${pkg[1]}`;
  const own = /\/(dist|src)\/(.+)$/.exec(url);
  if (own !== null) return `vigil:${own[2]}`;
  if (url.startsWith("node:")) return url;
  return url;
}

const [file, topText, fromText, toText] = process.argv.slice(2);
if (file === undefined) {
  console.error("usage: node --import tsx bench/profile-summary.ts FILE.cpuprofile [TOP [FROM_S [TO_S]]]");
  process.exit(2);
}
const top = Number(topText ?? 25);
const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const fromUs = profile.startTime + Number(fromText ?? 0) * 1e6;
const toUs = toText === undefined ? profile.endTime : profile.startTime + Number(toText) * 1e6;
const selfUs = new Map<number, number>();
const totalUs = new Map<string, number>();
const label = (frame: ProfileNode["callFrame"]): string =>
  `${frame.functionName || "(anonymous)"} ${place(frame)}${frame.url === "" ? "" : `:${frame.lineNumber + 1}`}`;
let at = profile.startTime;
for (let i = 0; i < profile.samples.length; i += 1) {
  const id = profile.samples[i]!;
  const delta = profile.timeDeltas[i] ?? 0;
  at += delta;
  if (at < fromUs || at > toUs) continue;
  selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  const seen = new Set<string>();
  for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
    const frame = byId.get(n)?.callFrame;
    if (frame !== undefined) seen.add(label(frame));
  }
  for (const name of seen) totalUs.set(name, (totalUs.get(name) ?? 0) + delta);
}
const total = Math.min(toUs, profile.endTime) - Math.max(fromUs, profile.startTime);
const byFunction = new Map<string, number>();
const byPlace = new Map<string, number>();
for (const [id, us] of selfUs) {
  const frame = byId.get(id)?.callFrame;
  if (frame === undefined) continue;
  const where = place(frame);
  const name = label(frame);
  byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  byPlace.set(where, (byPlace.get(where) ?? 0) + us);
}
const pct = (us: number): string => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
const show = (title: string, entries: Map<string, number>): void => {
  console.log(`\n${title}`);
  for (const [name, us] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${pct(us)}  ${name}`);
  }
};
console.log(`${file}: ${(total / 1e6).toFixed(1)} s profiled`);
show("self time by place", byPlace);
show("self time by function", byFunction);
show("total time by function", totalUs);
