#!/usr/bin/env node
// Builds the hub's web console: bundles console/src/main.ts with uPlot and the styles
// into content-hashed files under dist/console/assets/ (served with a year-long immutable cache) and
// writes dist/console/index.html naming them (served with `no-cache`, so a new build is seen at once).
// `npm run build` runs it after tsc; the `prepare` script runs the build at install (`npm ci`).
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { build } from "esbuild";

const root = join(import.meta.dirname, "..");

/**
 * Builds the console into `outDir` (default dist/console), replacing what was there; resolves to
 * the names of the script and style sheet, relative to `outDir`.
 */
export async function buildConsole(outDir = join(root, "dist", "console")) {
  rmSync(outDir, { recursive: true, force: true });
  const assets = join(outDir, "assets");
  mkdirSync(assets, { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { console: "console/src/main.ts" },
    bundle: true,
    format: "esm",
    // Browsers of the last few years; the console uses no syntax newer than ES2022.
    target: ["es2022", "chrome111", "firefox111", "safari16"],
    minify: true,
    sourcemap: "linked",
    outdir: assets,
    entryNames: "[name]-[hash]",
    metafile: true,
    legalComments: "linked",
    logLevel: "warning",
  });
  const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
  const script = outputs.find((name) => name.endsWith(".js"));
  const style = outputs.find((name) => name.endsWith(".css"));
  if (script === undefined || style === undefined) throw new Error(`unexpected console build: ${outputs}`);
  const html = readFileSync(join(root, "console", "index.html"), "utf8")
    .replace("{{script}}", `assets/${script}`)
    .replace("{{style}}", `assets/${style}`);
  writeFileSync(join(outDir, "index.html"), html);
  // uPlot (MIT) is inside the bundle: its licence travels with it.
  copyFileSync(join(root, "node_modules", "uplot", "LICENSE"), join(assets, "uplot-LICENSE.txt"));
  return { script: `assets/${script}`, style: `assets/${style}` };
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const built = await buildConsole();
  console.log(`console built: dist/console/index.html, ${built.script}, ${built.style}`);
}
