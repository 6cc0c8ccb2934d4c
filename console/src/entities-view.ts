/**
 * The entities page: counts by severity (`GET /v0/entities/summary`), a filter box in the entity
 * filter language (DESIGN 5.2) that narrows the list as the user types, a grouping by any attribute
 * and the table of entities with their key attributes and severity. A filter the hub refuses shows
 * the hub's message with the position marked, and the last good list stays.
 */
import { ApiError, api, query } from "./api.js";
import { h, labelled, replace } from "./dom.js";
import {
  type Entity,
  entityName,
  SEVERITIES,
  type SummaryGroup,
  severityBadge,
  severityById,
  totals,
} from "./model.js";

/** How long typing must pause before the list is asked for again. */
const TYPING_PAUSE_MS = 250; // ms
/** How often the list is refreshed while it is shown. */
const REFRESH_MS = 15_000; // 15 s
/** Ids per severity the summary lists (its maximum): the table's severities come from these. */
const SUMMARY_SAMPLES = 1000;
/** Attributes shown as their own columns; the others are listed together. */
const KEY_ATTRIBUTES = [
  ["svc.gateway", "Gateway"],
  ["svc.probe", "Probe"],
  ["svc.hostname", "Hostname"],
] as const;

export interface ListState {
  filter: string;
  groupBy: string;
}

/** The list's state from the location hash (`#/?filter=…&groupBy=…`). */
export function listState(hash: string): ListState {
  const params = new URLSearchParams(hash.split("?")[1] ?? "");
  return { filter: params.get("filter") ?? "", groupBy: params.get("groupBy") ?? "" };
}

function listHash(state: ListState): string {
  const params = new URLSearchParams();
  if (state.filter !== "") params.set("filter", state.filter);
  if (state.groupBy !== "") params.set("groupBy", state.groupBy);
  const text = params.toString();
  return text === "" ? "#/" : `#/?${text}`;
}

/** The first `at position N` of a filter error (a 0-based offset into the filter text). */
export function errorPosition(message: string): number | undefined {
  const match = /at position (\d+)/.exec(message);
  return match === null ? undefined : Number(match[1]);
}

/** Renders the entities page into `main`; returns a function that stops its timers. */
export function showEntities(main: HTMLElement, initial: ListState): () => void {
  const state = { ...initial };
  let sequence = 0;
  let typingTimer: ReturnType<typeof setTimeout> | undefined;

  const counts = h("ul", { class: "counts", "aria-label": "Entities by severity" });
  const filterInput = h("input", {
    type: "search",
    name: "filter",
    value: state.filter,
    placeholder: 'user.Environment = prod AND svc.name IN ("web-01", "web-02")',
    autocomplete: "off",
    spellcheck: "false",
    "aria-describedby": "filter-help filter-error",
  });
  const groupSelect = h("select", { name: "groupBy" }, h("option", { value: "" }, "No grouping"));
  const errorBox = h("div", { class: "filter-error", id: "filter-error", role: "alert" });
  const status = h("p", { class: "status", role: "status" });
  const table = h("table", { class: "entities" });
  replace(
    main,
    h(
      "section",
      { "aria-labelledby": "entities-title" },
      h("h1", { id: "entities-title" }, "Entities"),
      counts,
      h(
        "form",
        { class: "controls", role: "search", onsubmit: (event: Event) => event.preventDefault() },
        labelled("Filter", filterInput),
        labelled("Group by", groupSelect),
      ),
      h(
        "p",
        { class: "help", id: "filter-help" },
        "Attributes compared with = != < <= > >=, IN (…), EXISTS, joined with AND / OR and parentheses.",
      ),
      errorBox,
      status,
      table,
    ),
  );

  const showError = (error: ApiError | undefined) => {
    if (error === undefined) {
      replace(errorBox);
      filterInput.removeAttribute("aria-invalid");
      return;
    }
    filterInput.setAttribute("aria-invalid", "true");
    const position = errorPosition(error.body);
    const marked =
      position === undefined || error.title !== "Invalid entity filter"
        ? undefined
        : h(
            "pre",
            { class: "filter-mark", "aria-label": `The filter, with position ${position} marked` },
            state.filter.slice(0, position),
            h("mark", {}, state.filter.slice(position, position + 1) || " "),
            state.filter.slice(position + 1),
            "\n",
            `${" ".repeat([...state.filter.slice(0, position)].length)}^`,
          );
    replace(errorBox, h("strong", {}, `${error.title}: `), error.body, marked);
  };

  const load = async () => {
    const mine = ++sequence;
    const filter = state.filter.trim() === "" ? undefined : state.filter;
    try {
      const [entities, summary] = await Promise.all([
        api<Entity[]>(`/v0/entities${query([["filter", filter]])}`),
        api<SummaryGroup[]>(
          `/v0/entities/summary${query([
            ["filter", filter],
            ["groupBy", state.groupBy === "" ? undefined : state.groupBy],
            ["nrSamples", String(SUMMARY_SAMPLES)],
          ])}`,
        ),
      ]);
      if (mine !== sequence) return;
      showError(undefined);
      render(entities, summary);
    } catch (error) {
      if (mine !== sequence || !(error instanceof ApiError)) return;
      showError(error);
      table.classList.add("stale");
      replace(status, "The list below is from the last filter the hub accepted.");
    }
  };

  const loadAttributes = async () => {
    try {
      const attributes = await api<{ name: string }[]>("/v0/entities/attributes");
      replace(
        groupSelect,
        h("option", { value: "" }, "No grouping"),
        attributes.map((a) => h("option", { value: a.name, selected: a.name === state.groupBy }, a.name)),
      );
    } catch {
      // The list itself shows the error; grouping waits for the next refresh.
    }
  };

  const render = (unsorted: readonly Entity[], summary: readonly SummaryGroup[]) => {
    table.classList.remove("stale");
    const severities = severityById(summary);
    // Trouble first: by severity (CRITICAL down to UNDEFINED), then by name.
    const rank = (entity: Entity) => {
      const index = SEVERITIES.indexOf(
        (severities.get(entity.id) ?? "UNDEFINED") as (typeof SEVERITIES)[number],
      );
      return index < 0 ? SEVERITIES.length : index;
    };
    const entities = unsorted
      .slice()
      .sort((a, b) => rank(a) - rank(b) || entityName(a).localeCompare(entityName(b)));
    const counted = totals(summary);
    replace(
      counts,
      SEVERITIES.map((severity) =>
        h(
          "li",
          {},
          severityBadge(severity),
          h("span", { class: "count" }, String(counted.get(severity) ?? 0)),
        ),
      ),
    );
    replace(status, `${entities.length} ${entities.length === 1 ? "entity" : "entities"}`);
    const head = h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Name"),
        h("th", { scope: "col" }, "Severity"),
        KEY_ATTRIBUTES.map(([, label]) => h("th", { scope: "col" }, label)),
        h("th", { scope: "col" }, "Attributes"),
      ),
    );
    const row = (entity: Entity) =>
      h(
        "tr",
        {},
        h("th", { scope: "row" }, h("a", { href: `#/entity/${entity.id}` }, entityName(entity))),
        h("td", {}, severityBadge(severities.get(entity.id))),
        KEY_ATTRIBUTES.map(([name]) => h("td", {}, entity.attributes[name] ?? "")),
        h(
          "td",
          { class: "attributes" },
          Object.entries(entity.attributes)
            .filter(([name]) => !name.startsWith("svc."))
            .map(([name, value]) => h("span", { class: "chip" }, `${name.replace(/^user\./, "")}=${value}`)),
        ),
      );
    const columns = 3 + KEY_ATTRIBUTES.length;
    if (state.groupBy === "") {
      replace(
        table,
        h("caption", {}, "Entities and their severity"),
        head,
        h("tbody", {}, entities.map(row)),
      );
      return;
    }
    const groupBy = state.groupBy;
    const bodies = summary.map((group) => {
      const value = group.attributes[groupBy] ?? "";
      const members = entities.filter((e) => (e.attributes[groupBy] ?? "") === value);
      const worst = group.counts
        .slice()
        .sort(
          (a, b) =>
            SEVERITIES.indexOf(a.states.severity as never) - SEVERITIES.indexOf(b.states.severity as never),
        )
        .map((c) => `${c.count} ${c.states.severity}`)
        .join(", ");
      return h(
        "tbody",
        {},
        h(
          "tr",
          { class: "group" },
          h(
            "th",
            { scope: "rowgroup", colspan: columns },
            `${groupBy}: ${value === "" ? "(none)" : value}`,
            h("span", { class: "group-counts" }, ` — ${group.count} (${worst})`),
          ),
        ),
        members.map(row),
      );
    });
    replace(table, h("caption", {}, `Entities grouped by ${groupBy}`), head, bodies);
  };

  const changed = () => {
    history.replaceState(null, "", listHash(state));
    void load();
  };
  filterInput.addEventListener("input", () => {
    state.filter = filterInput.value;
    clearTimeout(typingTimer);
    typingTimer = setTimeout(changed, TYPING_PAUSE_MS);
  });
  groupSelect.addEventListener("change", () => {
    state.groupBy = groupSelect.value;
    changed();
  });

  void loadAttributes();
  void load();
  const timer = setInterval(() => {
    if (document.visibilityState === "visible") void load();
  }, REFRESH_MS);
  return () => {
    clearInterval(timer);
    clearTimeout(typingTimer);
    sequence++;
  };
}
