/**
 * An entity's page: its attributes and severity, its samplers, dataviews and metrics
 * (`GET /v0/entities/{id}/metrics`), a chart of one metric over time (`POST /v0/metrics/query`, with
 * the aggregation, bucket, range and zone the user picks, one series per row through `{rowname}` or
 * the rows picked), the latest values of a dataview, snooze and assignment actions through the
 * gateway's command API (actions.ts), and the entity's event history (`POST /v0/events/recordsQuery`).
 */
import { showActions } from "./actions.js";
import { ApiError, api, query } from "./api.js";
import { Chart } from "./chart.js";
import { type Child, h, labelled, replace } from "./dom.js";
import {
  type Entity,
  entityFilter,
  entityName,
  escapeSegment,
  type MetricInfo,
  type MetricPath,
  parseMetricName,
  type SummaryGroup,
  severityBadge,
  severityById,
} from "./model.js";

/** How often the page's data is read again while it is shown. */
const REFRESH_MS = 15_000; // 15 s
/** Bucket durations offered (DESIGN 5.3's list). */
const BUCKETS = [
  ["PT1M", "1 minute"],
  ["PT5M", "5 minutes"],
  ["PT15M", "15 minutes"],
  ["PT1H", "1 hour"],
  ["PT3H", "3 hours"],
  ["PT12H", "12 hours"],
  ["P1D", "1 day"],
  ["P1W", "1 week"],
  ["P1M", "1 month"],
] as const;
/** Time ranges offered, ending now. */
const RANGES = [
  ["15m", "Last 15 minutes", 15 * 60_000],
  ["1h", "Last hour", 3_600_000],
  ["6h", "Last 6 hours", 6 * 3_600_000],
  ["24h", "Last 24 hours", 24 * 3_600_000],
  ["7d", "Last 7 days", 7 * 86_400_000],
  ["30d", "Last 30 days", 30 * 86_400_000],
] as const;
/** Zones offered besides the browser's; any IANA name or offset can be typed. */
const ZONES = [
  "UTC",
  "Europe/London",
  "Europe/Paris",
  "America/New_York",
  "Asia/Kolkata",
  "Asia/Tokyo",
  "+05:30",
];
/** When the events and severity are read again after a command. */
const AFTER_COMMAND_MS = [0, 500, 1_500, 4_000]; // ms
/** Events listed at most. */
const EVENT_LIMIT = 500;

interface QueryResponse {
  readonly schema: { readonly metrics: Readonly<Record<string, Readonly<Record<string, { unit: string }>>>> };
  readonly data: readonly {
    readonly bucket: string;
    readonly group: Readonly<Record<string, string | number>>;
    readonly metrics: Readonly<Record<string, Readonly<Record<string, number | null>>>>;
  }[];
}

interface EventRecord {
  readonly timestamp: string;
  readonly type: string;
  readonly metric: string;
  readonly target: Readonly<Record<string, unknown>>;
  readonly data: Readonly<Record<string, unknown>>;
}

/** The browser's time zone, the chart's default. */
function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** `to` (the next whole minute, so the current bucket is in) and `from` for a range. */
function rangeEnding(ms: number): { from: string; to: string } {
  const to = Math.ceil((Date.now() + 1) / 60_000) * 60_000;
  return { from: new Date(to - ms).toISOString(), to: new Date(to).toISOString() };
}

/** The value of the one aggregation asked for, whatever the key it is answered under. */
function single(metrics: Readonly<Record<string, number | null>> | undefined): number | null {
  if (metrics === undefined) return null;
  const value = Object.values(metrics)[0];
  return typeof value === "number" ? value : null;
}

function formatNumber(value: number | null | undefined): string {
  if (value === null || value === undefined) return "";
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6)));
}

/** Renders the entity page into `main`; returns a function that stops its timers. */
export function showEntity(main: HTMLElement, id: number): () => void {
  let stopped = false;
  const cleanups: (() => void)[] = [];
  replace(main, h("p", { class: "status", role: "status" }, "Loading…"));

  const start = async () => {
    let entity: Entity;
    let metrics: MetricInfo[];
    let allMetrics: MetricInfo[];
    let aggregations: Record<string, { parameters: unknown[]; description: string }>;
    try {
      [entity, metrics, allMetrics, aggregations] = await Promise.all([
        api<Entity>(`/v0/entities/${id}`),
        api<MetricInfo[]>(`/v0/entities/${id}/metrics`),
        api<MetricInfo[]>(`/v0/entities/${id}/metrics?includeNonNumeric=true`),
        api<Record<string, { parameters: unknown[]; description: string }>>("/v0/metrics/aggregations"),
      ]);
    } catch (error) {
      if (stopped) return;
      const text = error instanceof ApiError ? `${error.title}: ${error.body}` : String(error);
      replace(
        main,
        h("p", { class: "error", role: "alert" }, text),
        h("a", { href: "#/" }, "Back to entities"),
      );
      return;
    }
    if (stopped) return;
    const filter = entityFilter(entity);
    const severitySlot = h("span", {});
    const chartSection = h("section", { "aria-labelledby": "chart-title" });
    const latestSection = h("section", { "aria-labelledby": "latest-title" });
    const actionsSection = h("section", { "aria-labelledby": "actions-title" });
    const eventsSection = h("section", { "aria-labelledby": "events-title" });
    replace(
      main,
      h("p", {}, h("a", { href: "#/" }, "← Entities")),
      h("h1", {}, entityName(entity), " ", severitySlot),
      h(
        "dl",
        { class: "attributes-list", "aria-label": "Attributes" },
        Object.entries(entity.attributes).map(([name, value]) => [h("dt", {}, name), h("dd", {}, value)]),
      ),
      treeSection(allMetrics),
      chartSection,
      latestSection,
      actionsSection,
      eventsSection,
    );

    const loadSeverity = async () => {
      try {
        const summary = await api<SummaryGroup[]>(
          `/v0/entities/summary${query([
            ["filter", filter],
            ["nrSamples", "1000"],
          ])}`,
        );
        replace(severitySlot, severityBadge(severityById(summary).get(id)));
      } catch {
        // The other sections show what is wrong.
      }
    };
    const chart = chartPanel(chartSection, id, filter, metrics, aggregations);
    const latest = latestPanel(latestSection, id, filter, metrics);
    const events = eventsPanel(eventsSection, filter);
    // A command's events reach the hub a moment after the gateway answers: read them again shortly.
    const settle: ReturnType<typeof setTimeout>[] = [];
    const actions = showActions(actionsSection, entity, allMetrics, () => {
      for (const delay of AFTER_COMMAND_MS)
        settle.push(
          setTimeout(() => {
            void events.load();
            void loadSeverity();
          }, delay),
        );
    });
    cleanups.push(() => settle.forEach(clearTimeout));
    cleanups.push(chart.stop, actions.stop);
    void loadSeverity();
    const timer = setInterval(() => {
      if (document.visibilityState !== "visible") return;
      void loadSeverity();
      void chart.load();
      void latest.load();
      void events.load();
    }, REFRESH_MS);
    cleanups.push(() => clearInterval(timer));
  };
  void start();
  return () => {
    stopped = true;
    for (const cleanup of cleanups) cleanup();
  };
}

/** Samplers › dataviews › metrics, from the metric names. */
function treeSection(metrics: readonly MetricInfo[]): HTMLElement {
  const samplers = new Map<string, Map<string, { path: MetricPath; info: MetricInfo }[]>>();
  for (const info of metrics) {
    const path = parseMetricName(info.name);
    if (path === undefined) continue;
    const samplerLabel = path.type === "" ? path.sampler : `${path.sampler} (${path.type})`;
    const dataviews = samplers.get(samplerLabel) ?? new Map();
    samplers.set(samplerLabel, dataviews);
    const list = dataviews.get(path.dataview) ?? [];
    list.push({ path, info });
    dataviews.set(path.dataview, list);
  }
  return h(
    "section",
    { "aria-labelledby": "tree-title" },
    h("h2", { id: "tree-title" }, "Samplers and dataviews"),
    samplers.size === 0
      ? h("p", { class: "empty" }, "No metrics stored for this entity yet.")
      : h(
          "ul",
          { class: "tree" },
          [...samplers].map(([sampler, dataviews]) =>
            h(
              "li",
              {},
              h("span", { class: "kind" }, "Sampler "),
              h("strong", {}, sampler),
              h(
                "ul",
                {},
                [...dataviews].map(([dataview, list]) => {
                  const describe = ({ path, info }: { path: MetricPath; info: MetricInfo }) =>
                    `${path.column}${info.unit === "none" ? "" : ` (${info.unit})`}`;
                  const columns = list.filter((m) => m.path.rowRef !== null).map(describe);
                  const headlines = list.filter((m) => m.path.rowRef === null).map(describe);
                  return h(
                    "li",
                    {},
                    h("span", { class: "kind" }, "Dataview "),
                    h("strong", {}, dataview),
                    columns.length > 0 && [h("span", { class: "kind" }, " — columns: "), columns.join(", ")],
                    headlines.length > 0 && [
                      h("span", { class: "kind" }, " — headlines: "),
                      headlines.join(", "),
                    ],
                  );
                }),
              ),
            ),
          ),
        ),
  );
}

/** The chart with its controls and the table of the values it draws. */
function chartPanel(
  section: HTMLElement,
  id: number,
  filter: string,
  metrics: readonly MetricInfo[],
  aggregations: Readonly<Record<string, { parameters: unknown[]; description: string }>>,
): { load: () => Promise<void>; stop: () => void } {
  // Shown first: a table column with a declared unit, else any table column, else the first metric.
  const columnsFirst = metrics.filter((m) => parseMetricName(m.name)?.rowRef !== null);
  const preferred = columnsFirst.find((m) => m.unit !== "none") ?? columnsFirst[0] ?? metrics[0];
  const metricSelect = h(
    "select",
    { name: "metric" },
    metrics.map((m) => h("option", { value: m.name, selected: m === preferred }, m.name)),
  );
  const rowsSelect = h("select", { name: "rows", multiple: true, size: 4 });
  const aggregationSelect = h(
    "select",
    { name: "aggregation" },
    Object.entries(aggregations).map(([name, info]) =>
      h("option", { value: name, title: info.description, selected: name === "svc.avg" }, name),
    ),
  );
  const percentileInput = h("input", { name: "p", value: "0.95", inputmode: "decimal", size: 5 });
  const percentileField = labelled("Percentile (0–1)", percentileInput);
  const bucketSelect = h(
    "select",
    { name: "bucket" },
    BUCKETS.map(([value, label]) => h("option", { value, selected: value === "PT1M" }, label)),
  );
  const rangeSelect = h(
    "select",
    { name: "range" },
    RANGES.map(([value, label]) => h("option", { value, selected: value === "1h" }, label)),
  );
  const zoneInput = h("input", {
    name: "zone",
    value: browserZone(),
    list: "zones",
    size: 18,
    spellcheck: "false",
  });
  const zones = h(
    "datalist",
    { id: "zones" },
    [browserZone(), ...ZONES].map((z) => h("option", { value: z })),
  );
  const plotArea = h("div", { class: "plot", role: "img", "aria-label": "Chart of the chosen metric" });
  const status = h("p", { class: "status", role: "status" });
  const table = h("table", { class: "values" });
  const form = h(
    "form",
    { class: "controls", onsubmit: (event: Event) => event.preventDefault() },
    labelled("Metric", metricSelect),
    labelled("Rows", rowsSelect, "none picked: every row"),
    labelled("Aggregation", aggregationSelect),
    percentileField,
    labelled("Bucket", bucketSelect),
    labelled("Time range", rangeSelect),
    labelled("Time zone", zoneInput),
    zones,
  );
  replace(
    section,
    h("h2", { id: "chart-title" }, "Chart"),
    metrics.length === 0
      ? h("p", { class: "empty" }, "No numeric metric to chart yet.")
      : [form, status, plotArea],
    h("details", {}, h("summary", {}, "Values drawn"), table),
  );
  const chart = new Chart(plotArea);
  let sequence = 0;

  const loadRows = async () => {
    const path = parseMetricName(metricSelect.value);
    replace(rowsSelect);
    rowsSelect.disabled = path === undefined || path.rowRef === null;
    if (path === undefined || path.rowRef === null) return;
    try {
      const rows = await api<string[]>(
        `/v0/entities/${id}/metrics/rows${query([["path", metricSelect.value]])}`,
      );
      replace(
        rowsSelect,
        rows.map((row) => h("option", { value: row }, row)),
      );
    } catch {
      // The chart's own request shows the error.
    }
  };

  const load = async () => {
    const metric = metricSelect.value;
    const path = parseMetricName(metric);
    if (path === undefined) return;
    const mine = ++sequence;
    const picked = [...rowsSelect.selectedOptions].map((o) => o.value);
    const include =
      path.rowRef === null || picked.length === 0
        ? [metric]
        : picked.map(
            (row) => `${path.samplerRef}/${path.dataviewRef}/${escapeSegment(row)}/${path.columnRef}`,
          );
    const percentile = aggregationSelect.value === "svc.percentile";
    percentileField.hidden = !percentile;
    const aggregation = percentile
      ? `svc.percentile(${percentileInput.value.trim()})`
      : aggregationSelect.value;
    const range = RANGES.find(([value]) => value === rangeSelect.value)?.[2] ?? 3_600_000;
    const zone = zoneInput.value.trim() || browserZone();
    replace(status, "Loading…");
    const asked = rangeEnding(range);
    try {
      const response = await api<QueryResponse>("/v0/metrics/query", {
        body: {
          zoneId: zone,
          filter: { entities: filter, range: asked },
          metrics: [{ identifier: "m", include }],
          aggregations: [aggregation],
          bucketing: { duration: bucketSelect.value },
          grouping: ["entity", "rowname"],
        },
      });
      if (mine !== sequence) return;
      const data = response.data.filter((d) => d.group.entity === id);
      const buckets = [...new Set(data.map((d) => d.bucket))].sort((a, b) => Date.parse(a) - Date.parse(b));
      const rows = [...new Set(data.map((d) => String(d.group.rowname ?? "")))].sort();
      const index = new Map(buckets.map((b, i) => [b, i]));
      const series = rows.map((row) => {
        const values: (number | null)[] = buckets.map(() => null);
        for (const d of data)
          if (String(d.group.rowname ?? "") === row) values[index.get(d.bucket) ?? 0] = single(d.metrics.m);
        return { label: row === "" ? path.column : row, values };
      });
      const unit = Object.values(response.schema.metrics.m ?? {})[0]?.unit ?? "none";
      chart.draw(
        buckets.map((b) => Date.parse(b) / 1000),
        series,
        zone,
        unit,
        `${aggregation} of ${path.column} per ${bucketSelect.selectedOptions[0]?.textContent ?? bucketSelect.value}`,
        { from: Date.parse(asked.from) / 1000, to: Date.parse(asked.to) / 1000 },
      );
      replace(
        status,
        `${aggregation} of ${metric}, ${bucketSelect.value} buckets, ${rangeSelect.selectedOptions[0]?.textContent ?? ""}, time zone ${zone}: ${buckets.length} buckets.`,
      );
      replace(
        table,
        h("caption", {}, `${aggregation} of ${path.column} (${unit}) per bucket`),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col" }, "Bucket"),
            series.map((s) => h("th", { scope: "col" }, s.label)),
          ),
        ),
        h(
          "tbody",
          {},
          buckets.map((bucket, i) =>
            h(
              "tr",
              {},
              h("th", { scope: "row" }, bucket),
              series.map((s) => h("td", {}, formatNumber(s.values[i]))),
            ),
          ),
        ),
      );
    } catch (error) {
      if (mine !== sequence) return;
      replace(
        status,
        h(
          "span",
          { class: "error", role: "alert" },
          error instanceof ApiError ? `${error.title}: ${error.body}` : String(error),
        ),
      );
    }
  };

  metricSelect.addEventListener("change", () => {
    void loadRows().then(load);
  });
  for (const control of [
    rowsSelect,
    aggregationSelect,
    percentileInput,
    bucketSelect,
    rangeSelect,
    zoneInput,
  ])
    control.addEventListener("change", () => void load());
  percentileField.hidden = true;
  if (metrics.length > 0) void loadRows().then(load);
  return { load, stop: () => chart.destroy() };
}

/** The latest value of each cell of a dataview in the last day (`svc.last`, numeric values). */
function latestPanel(
  section: HTMLElement,
  id: number,
  filter: string,
  metrics: readonly MetricInfo[],
): { load: () => Promise<void> } {
  const dataviews = new Map<string, { path: MetricPath; name: string }[]>();
  for (const info of metrics) {
    const path = parseMetricName(info.name);
    if (path === undefined) continue;
    const key = `${path.samplerRef}/${path.dataviewRef}`;
    dataviews.set(key, [...(dataviews.get(key) ?? []), { path, name: info.name }]);
  }
  // Shown first: the dataview with the most table columns.
  const columnCount = (key: string) => dataviews.get(key)?.filter((c) => c.path.rowRef !== null).length ?? 0;
  const widest = [...dataviews.keys()].reduce<string | undefined>(
    (best, key) => (best === undefined || columnCount(key) > columnCount(best) ? key : best),
    undefined,
  );
  const select = h(
    "select",
    { name: "dataview" },
    [...dataviews.keys()].map((key) => h("option", { value: key, selected: key === widest }, key)),
  );
  const body = h("div", {});
  replace(
    section,
    h("h2", { id: "latest-title" }, "Latest values"),
    dataviews.size === 0
      ? h("p", { class: "empty" }, "No numeric values yet.")
      : h(
          "form",
          { class: "controls", onsubmit: (e: Event) => e.preventDefault() },
          labelled("Dataview", select),
        ),
    body,
  );
  let sequence = 0;
  const load = async () => {
    const cells = dataviews.get(select.value);
    if (cells === undefined) return;
    const mine = ++sequence;
    try {
      const response = await api<QueryResponse>("/v0/metrics/query", {
        body: {
          zoneId: "UTC",
          filter: { entities: filter, range: rangeEnding(86_400_000) },
          metrics: cells.map((cell, i) => ({ identifier: `c${i}`, include: [cell.name] })),
          aggregations: ["svc.last"],
          bucketing: { duration: "P1D" },
          grouping: ["entity", "rowname"],
        },
      });
      if (mine !== sequence) return;
      // Buckets oldest first: a later bucket's value replaces an earlier one.
      const data = response.data
        .filter((d) => d.group.entity === id)
        .slice()
        .sort((a, b) => Date.parse(a.bucket) - Date.parse(b.bucket));
      const latest = new Map<string, number>();
      for (const d of data)
        for (const [identifier, values] of Object.entries(d.metrics)) {
          const value = single(values);
          if (value !== null) latest.set(`${identifier}\u0000${d.group.rowname ?? ""}`, value);
        }
      const columns = cells
        .map((cell, i) => ({ ...cell, identifier: `c${i}` }))
        .filter((c) => c.path.rowRef !== null);
      const headlines = cells
        .map((cell, i) => ({ ...cell, identifier: `c${i}` }))
        .filter((c) => c.path.rowRef === null);
      const rows = [
        ...new Set(data.map((d) => String(d.group.rowname ?? "")).filter((r) => r !== "")),
      ].sort();
      const parts: Child[] = [];
      if (headlines.length > 0)
        parts.push(
          h(
            "dl",
            { class: "headlines", "aria-label": "Headlines" },
            headlines.map((c) => [
              h("dt", {}, c.path.column),
              h("dd", {}, formatNumber(latest.get(`${c.identifier}\u0000`)) || "—"),
            ]),
          ),
        );
      parts.push(
        rows.length === 0 || columns.length === 0
          ? h("p", { class: "empty" }, "No row values in the last day.")
          : h(
              "table",
              { class: "latest" },
              h("caption", {}, `Latest values of ${select.value} in the last day`),
              h(
                "thead",
                {},
                h(
                  "tr",
                  {},
                  h("th", { scope: "col" }, "Row"),
                  columns.map((c) => h("th", { scope: "col" }, c.path.column)),
                ),
              ),
              h(
                "tbody",
                {},
                rows.map((row) =>
                  h(
                    "tr",
                    {},
                    h("th", { scope: "row" }, row),
                    columns.map((c) => h("td", {}, formatNumber(latest.get(`${c.identifier}\u0000${row}`)))),
                  ),
                ),
              ),
            ),
      );
      replace(body, parts);
    } catch (error) {
      if (mine !== sequence) return;
      replace(
        body,
        h(
          "p",
          { class: "error", role: "alert" },
          error instanceof ApiError ? `${error.title}: ${error.body}` : String(error),
        ),
      );
    }
  };
  select.addEventListener("change", () => void load());
  void load();
  return { load };
}

/** What an event says, in words. */
function describeEvent(event: EventRecord): string {
  const d = event.data;
  const text = (name: string) => (typeof d[name] === "string" ? (d[name] as string) : "");
  const comment = text("comment") === "" ? "" : ` — “${text("comment")}”`;
  if (event.type === "severity") {
    const previous = text("previousSeverity");
    return `${previous === "" ? "" : `${previous} → `}${text("severity")}${d.active === false ? " (inactive)" : ""}`;
  }
  if (event.type === "snooze")
    return d.snoozed === true
      ? `Snoozed by ${text("snoozedBy")}${comment}`
      : `Unsnoozed by ${text("unsnoozedBy")}${comment}`;
  if (event.type === "userassignment")
    return d.userAssigned === true
      ? `Assigned to ${text("assignedTo")} by ${text("assignedBy")}${comment}`
      : `Unassigned by ${text("unassignedBy")}${comment}`;
  return event.type;
}

/** Where an event happened: the cell, or the dataview, sampler or entity. */
function eventItem(event: EventRecord): string {
  if (event.metric !== "") return event.metric;
  const t = event.target;
  const parts = [t.sampler, t.dataview].filter((p): p is string => typeof p === "string" && p !== "");
  return parts.length === 0 ? "managed entity" : parts.join("/");
}

/** The entity's severity, snooze and assignment history of the last day, newest first. */
function eventsPanel(section: HTMLElement, filter: string): { load: () => Promise<void> } {
  const body = h("div", {});
  replace(section, h("h2", { id: "events-title" }, "Events in the last 24 hours"), body);
  let sequence = 0;
  const load = async () => {
    const mine = ++sequence;
    try {
      const response = await api<Record<string, EventRecord[]>>("/v0/events/recordsQuery", {
        body: {
          filter: { entities: filter, range: rangeEnding(86_400_000) },
          zoneId: browserZone(),
          limit: EVENT_LIMIT,
        },
      });
      if (mine !== sequence) return;
      const events = Object.values(response).flat().reverse();
      replace(
        body,
        events.length === 0
          ? h("p", { class: "empty" }, "No events in the last 24 hours.")
          : h(
              "table",
              { class: "events" },
              h(
                "caption",
                {},
                events.length >= EVENT_LIMIT
                  ? `The first ${EVENT_LIMIT} events`
                  : `${events.length} events, newest first`,
              ),
              h(
                "thead",
                {},
                h(
                  "tr",
                  {},
                  h("th", { scope: "col" }, "Time"),
                  h("th", { scope: "col" }, "Type"),
                  h("th", { scope: "col" }, "Item"),
                  h("th", { scope: "col" }, "What happened"),
                ),
              ),
              h(
                "tbody",
                {},
                events.map((event) =>
                  h(
                    "tr",
                    {},
                    h("td", {}, event.timestamp),
                    h("td", {}, event.type),
                    h("td", {}, eventItem(event)),
                    h("td", {}, describeEvent(event)),
                  ),
                ),
              ),
            ),
      );
    } catch (error) {
      if (mine !== sequence) return;
      replace(
        body,
        h(
          "p",
          { class: "error", role: "alert" },
          error instanceof ApiError ? `${error.title}: ${error.body}` : String(error),
        ),
      );
    }
  };
  void load();
  return { load };
}
