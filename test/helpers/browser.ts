/**
 * Real-browser tests of the web console: Debian's Chromium driven by playwright-core
 * (never a downloaded browser), a `vigil up` system started in-process on free ports, and a page
 * watcher that records what a person would notice going wrong: console errors, uncaught
 * exceptions, failed requests, error answers and requests to any host but the hub.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { type Browser, chromium, type Page } from "playwright-core";
import type { RunningService } from "../../src/compose/service.js";
import { startSystem } from "../../src/compose/system.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { CONSOLE_DIR } from "../../src/hub/console/console-routes.js";
import type { PublicV2Message } from "../../src/messages/types.js";
import { eventually, tempDir } from "./vigil-process.js";

/** Debian's Chromium (`apt-get install chromium`; scripts/services.sh installs it in CI). */
export const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"];
/** Where the tests save full-page screenshots (a CI artifact; ignored by git). */
export const SCREENSHOTS = join(import.meta.dirname, "..", "..", "test-artifacts", "console");

/** Why the browser tests cannot run here, printed and given as the skip reason; undefined when they can. */
export function browserSkipReason(): string | undefined {
  if (!existsSync(CHROMIUM)) {
    return `console browser tests skipped: Chromium is not installed at ${CHROMIUM} (apt-get install chromium; scripts/services.sh does it in CI)`;
  }
  return undefined;
}

/** Fails with the fix when the console has not been built (`npm test` builds it first). */
export function requireBuiltConsole(): void {
  if (!existsSync(join(CONSOLE_DIR, "index.html"))) {
    throw new Error(`the web console is not built (${CONSOLE_DIR}): run \`npm run build\` first`);
  }
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** A running system and where its parts listen. */
export interface ConsoleSystem {
  readonly hub: string;
  readonly probe: string;
  readonly gateway: string;
  readonly dataDir: string;
  stop(): Promise<void>;
}

/** Starts `vigil up`'s system in-process with `yaml` (ports 0), in a throwaway data dir. */
export async function startConsoleSystem(yaml: string): Promise<ConsoleSystem> {
  const dir = tempDir("console");
  let system: RunningService;
  try {
    system = await startSystem({
      setup: parseSetup(yaml),
      dataDir: dir.path,
      demo: false,
      host: "127.0.0.1",
      logger: pino({ level: "silent" }),
    });
  } catch (error) {
    dir.remove();
    throw error;
  }
  const probeKey = Object.keys(system.urls).find((k) => k.startsWith("probe:")) ?? "";
  return {
    hub: system.urls.hub ?? "",
    gateway: system.urls.gateway ?? "",
    probe: system.urls[probeKey] ?? "",
    dataDir: dir.path,
    async stop() {
      try {
        await system.stop(5_000);
      } finally {
        dir.remove();
      }
    },
  };
}

/** PUTs a dataview's rows on the probe; asserts a 200. */
export async function putDataview(
  probe: string,
  entity: string,
  sampler: string,
  dataview: string,
  rows: readonly Record<string, string | number>[],
): Promise<void> {
  const response = await fetch(
    `${probe}/v1/managedEntity/${entity}/sampler/${sampler}/dataview/${dataview}`,
    { method: "PUT", body: JSON.stringify(rows) },
  );
  if (response.status !== 200)
    throw new Error(`PUT ${entity}/${dataview}: ${response.status} ${await response.text()}`);
}

/** The published messages of an NDJSON publish target. */
export function publishedMessages(file: string): PublicV2Message[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as PublicV2Message);
}

/** Waits until a message matching `match` is in the NDJSON file. */
export function published(file: string, match: (m: PublicV2Message) => boolean): Promise<PublicV2Message> {
  return eventually(async () => publishedMessages(file).find(match));
}

/** What went wrong on a page, as a person or its developer tools would see it. */
export interface PageProblems {
  readonly consoleErrors: string[];
  readonly pageErrors: string[];
  readonly failedRequests: string[];
  /** `STATUS METHOD URL` of every answer ≥ 400. */
  readonly errorAnswers: string[];
  /** Requests to any origin but the hub's (data: URLs aside). */
  readonly foreignRequests: string[];
  /** Every request URL, in order. */
  readonly requests: {
    method: string;
    url: string;
    authorization: string | undefined;
    body: string | null;
  }[];
}

/** Records the problems of `page`, which must only ever talk to `origin`. */
export function watchPage(page: Page, origin: string): PageProblems {
  const problems: PageProblems = {
    consoleErrors: [],
    pageErrors: [],
    failedRequests: [],
    errorAnswers: [],
    foreignRequests: [],
    requests: [],
  };
  page.on("console", (message) => {
    if (message.type() === "error")
      problems.consoleErrors.push(`${message.text()} (${message.location().url})`);
  });
  page.on("pageerror", (error) => problems.pageErrors.push(error.message));
  page.on("requestfailed", (request) =>
    problems.failedRequests.push(
      `${request.method()} ${request.url()}: ${request.failure()?.errorText ?? "?"}`,
    ),
  );
  page.on("request", (request) => {
    const url = request.url();
    problems.requests.push({
      method: request.method(),
      url,
      authorization: request.headers().authorization,
      body: request.postData(),
    });
    if (!url.startsWith("data:") && new URL(url).origin !== origin) problems.foreignRequests.push(url);
  });
  page.on("response", (response) => {
    if (response.status() >= 400)
      problems.errorAnswers.push(`${response.status()} ${response.request().method()} ${response.url()}`);
  });
  return problems;
}

/** Saves a full-page screenshot as test-artifacts/console/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** How many pixels of a canvas on the page have the colour `rgb` (the chart's series stroke). */
export async function pixelsOfColour(
  page: Page,
  selector: string,
  rgb: readonly [number, number, number],
): Promise<number> {
  return page
    .locator(selector)
    .first()
    .evaluate((canvas, colour) => {
      // The page's canvas, typed by what is used of it (the tests' TypeScript has no DOM types).
      const c = canvas as unknown as {
        width: number;
        height: number;
        getContext(
          kind: "2d",
        ): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } } | null;
      };
      const context = c.getContext("2d");
      if (context === null) return 0;
      const data = context.getImageData(0, 0, c.width, c.height).data;
      let count = 0;
      for (let i = 0; i < data.length; i += 4) {
        // Anti-aliasing blends edges: a small tolerance counts the stroke's own pixels only.
        if (
          Math.abs((data[i] ?? 0) - colour[0]) < 8 &&
          Math.abs((data[i + 1] ?? 0) - colour[1]) < 8 &&
          Math.abs((data[i + 2] ?? 0) - colour[2]) < 8 &&
          (data[i + 3] ?? 0) > 200
        )
          count++;
      }
      return count;
    }, rgb);
}
