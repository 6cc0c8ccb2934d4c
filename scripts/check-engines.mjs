#!/usr/bin/env node
// Checks that vigil's `engines.node` (package.json) names exactly the Node versions CI tests, and that
// every installed package's own `engines.node` accepts all of them. `.ci/run` tests the
// machine's Node (`npm test`) and Node 24 LTS (`scripts/node24.sh test`, whose VERSION is read here).
//
// Checks, each failure named on its own line:
//   1. the running Node and node24.sh's VERSION satisfy vigil's engines;
//   2. on the machine's Node (not the Node 24 run), every major vigil's engines admits is one CI
//      tests: the running major or node24.sh's;
//   3. every package under node_modules whose engines.node is a valid range accepts every version
//      vigil's engines admits (semver.subset), and each tested version; it is named with the
//      packages that depend on it.
// Exits 1 when a check fails, 0 otherwise; `--json` prints the findings as JSON instead.
// Uses `semver`, which npm's tooling installs in node_modules (a transitive dependency).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(ROOT, "package.json"));
const semver = require("semver");

/** Majors looked at when asking which ones vigil's engines admit. */
const MAJORS = Array.from({ length: 31 }, (_, i) => i + 10); // 10..40

function readJson(path) {
  return JSON.parse(readFileSync(path, "utf8"));
}

/** Node 24's version as scripts/node24.sh installs it. */
export function node24Version(root = ROOT) {
  const script = readFileSync(join(root, "scripts", "node24.sh"), "utf8");
  const match = /^VERSION=(\d+\.\d+\.\d+)\s*$/m.exec(script);
  if (match === null) throw new Error("scripts/node24.sh has no VERSION=x.y.z line");
  return match[1];
}

/** Every installed package: { name, version, dir, engines, dependsOn } (nested node_modules included). */
export function installedPackages(root = ROOT) {
  const found = [];
  const visit = (modulesDir) => {
    if (!existsSync(modulesDir)) return;
    for (const entry of readdirSync(modulesDir, { withFileTypes: true })) {
      if (!entry.isDirectory() && !entry.isSymbolicLink()) continue;
      if (entry.name.startsWith(".")) continue;
      const dir = join(modulesDir, entry.name);
      if (entry.name.startsWith("@")) {
        visit(dir);
        continue;
      }
      const manifest = join(dir, "package.json");
      if (!existsSync(manifest)) continue;
      const pkg = readJson(manifest);
      found.push({
        name: pkg.name ?? entry.name,
        version: pkg.version ?? "?",
        dir,
        engines: typeof pkg.engines?.node === "string" ? pkg.engines.node : undefined,
        dependsOn: Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies }),
      });
      visit(join(dir, "node_modules"));
    }
  };
  visit(join(root, "node_modules"));
  return found;
}

/** The findings: a list of problems (empty when every check passes) and what was checked. */
export function checkEngines({ running = process.version, root = ROOT } = {}) {
  const own = readJson(join(root, "package.json"));
  const range = own.engines?.node;
  const problems = [];
  if (typeof range !== "string" || semver.validRange(range) === null) {
    return { range, tested: [], problems: [`package.json engines.node is not a valid range: ${range}`] };
  }
  const node24 = node24Version(root);
  const tested = [...new Set([semver.clean(running), node24])];
  const testedMajors = new Set(tested.map((v) => semver.major(v)));

  for (const version of tested) {
    if (!semver.satisfies(version, range)) {
      problems.push(`vigil's engines.node "${range}" excludes Node ${version}, which CI tests`);
    }
  }
  const onNode24 = semver.major(running) === semver.major(node24);
  if (!onNode24) {
    for (const major of MAJORS) {
      if (semver.intersects(range, `${major}.x`) && !testedMajors.has(major)) {
        problems.push(`vigil's engines.node "${range}" admits Node ${major}, which CI does not test`);
      }
    }
  }

  const packages = installedPackages(root);
  const dependents = new Map();
  for (const pkg of packages) {
    for (const name of pkg.dependsOn)
      dependents.set(name, [...(dependents.get(name) ?? []), `${pkg.name}@${pkg.version}`]);
  }
  const offenders = [];
  for (const pkg of packages) {
    if (pkg.engines === undefined || semver.validRange(pkg.engines) === null) continue;
    const excluded = tested.filter((v) => !semver.satisfies(v, pkg.engines));
    if (excluded.length === 0 && semver.subset(range, pkg.engines)) continue;
    const by = dependents.get(pkg.name) ?? [];
    offenders.push({ name: pkg.name, version: pkg.version, engines: pkg.engines, excluded, requiredBy: by });
    problems.push(
      `${pkg.name}@${pkg.version} declares engines.node "${pkg.engines}", which does not accept all of "${range}"` +
        (excluded.length > 0 ? ` (excludes tested Node ${excluded.join(", ")})` : "") +
        ` — required by ${by.length > 0 ? by.join(", ") : "vigil"} (${pkg.dir.slice(root.length + 1)})`,
    );
  }
  return { range, tested, checkedPackages: packages.length, offenders, problems, majorsChecked: !onNode24 };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = checkEngines();
  if (process.argv.includes("--json")) {
    console.log(JSON.stringify(result, null, 2));
  } else {
    console.log(
      `engines.node "${result.range}"; CI tests Node ${result.tested.join(" and ")}; ${result.checkedPackages ?? 0} installed packages checked`,
    );
    for (const problem of result.problems) console.error(`check-engines: ${problem}`);
    if (result.problems.length === 0) console.log("check-engines: OK");
  }
  process.exit(result.problems.length === 0 ? 0 : 1);
}
