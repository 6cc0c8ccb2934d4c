/**
 * Snooze/unsnooze and assign/unassign (DESIGN 4.2) of the entity or one of its samplers or
 * dataviews. The browser talks only to the hub: the hub relays these requests to the gateway's
 * command API (`/console/gateway/v1/…`, src/hub/console/gateway-relay.ts), so the console needs no
 * cross-origin access and works when the hub is HTTPS and the gateway plain HTTP. After each
 * command the item's state is read back from the gateway (`GET /v1/items`) and shown.
 */
import { ApiError, api } from "./api.js";
import { h, labelled, replace } from "./dom.js";
import { type Entity, entityName, type MetricInfo, parseMetricName, severityBadge } from "./model.js";
import { subject } from "./session.js";

const RELAY = "/console/gateway/v1";

/** The event target of DESIGN 4.2 (`type` "" for a sampler without one). */
type Target = Record<string, string>;

interface ItemView {
  readonly severity: string;
  readonly snoozed: {
    readonly snoozed: boolean;
    readonly snoozedBy?: string;
    readonly comment?: string;
    readonly at?: string;
  };
  readonly snoozedParents: number;
  readonly assignment: {
    readonly userAssigned: boolean;
    readonly assignedTo?: string;
    readonly assignedBy?: string;
    readonly comment?: string;
  };
}

/** The entity and each sampler and dataview its metric names show, as command targets. */
function targets(entity: Entity, metrics: readonly MetricInfo[]): { label: string; target: Target }[] {
  const base: Target = {
    gateway: entity.attributes["svc.gateway"] ?? "",
    probe: entity.attributes["svc.probe"] ?? "",
    managedEntity: entity.attributes["svc.name"] ?? "",
  };
  const list = [{ label: `Managed entity ${entityName(entity)}`, target: base }];
  const seen = new Set<string>();
  for (const info of metrics) {
    const path = parseMetricName(info.name);
    if (path === undefined) continue;
    const sampler = { ...base, sampler: path.sampler, type: path.type };
    const samplerLabel = path.type === "" ? path.sampler : `${path.sampler}(${path.type})`;
    if (!seen.has(samplerLabel)) {
      seen.add(samplerLabel);
      list.push({ label: `Sampler ${samplerLabel}`, target: sampler });
    }
    const dataviewLabel = `${samplerLabel}/${path.dataview}`;
    if (!seen.has(dataviewLabel)) {
      seen.add(dataviewLabel);
      list.push({ label: `Dataview ${dataviewLabel}`, target: { ...sampler, dataview: path.dataview } });
    }
  }
  return list;
}

/** Renders the actions into `section`; `changed` runs after a command succeeded. */
export function showActions(
  section: HTMLElement,
  entity: Entity,
  metrics: readonly MetricInfo[],
  changed: () => void,
): { stop: () => void } {
  const options = targets(entity, metrics);
  const targetSelect = h(
    "select",
    { name: "target" },
    options.map((o, i) => h("option", { value: String(i) }, o.label)),
  );
  const userInput = h("input", {
    name: "user",
    value: subject() || "console",
    autocomplete: "username",
    size: 14,
  });
  const commentInput = h("input", { name: "comment", value: "", size: 24 });
  const assigneeInput = h("input", { name: "assignee", value: "", size: 14 });
  const state = h("dl", { class: "item-state", "aria-label": "State of the item" });
  const message = h("p", { class: "status", role: "status" });
  const button = (text: string, run: () => Promise<void>) =>
    h("button", { type: "button", onclick: () => void run() }, text);

  const target = (): Target => options[Number(targetSelect.value)]?.target ?? options[0]!.target;

  const loadState = async () => {
    try {
      const params = new URLSearchParams(target());
      const view = await api<{ item: ItemView }>(`${RELAY}/items?${params.toString()}`);
      const item = view.item;
      replace(
        state,
        h("dt", {}, "Severity"),
        h("dd", {}, severityBadge(item.severity)),
        h("dt", {}, "Snooze"),
        h(
          "dd",
          {},
          item.snoozed.snoozed
            ? `Snoozed by ${item.snoozed.snoozedBy ?? "?"}${item.snoozed.comment ? ` — “${item.snoozed.comment}”` : ""}`
            : item.snoozedParents > 0
              ? `Not snoozed (${item.snoozedParents} snoozed parent${item.snoozedParents === 1 ? "" : "s"})`
              : "Not snoozed",
        ),
        h("dt", {}, "Assignment"),
        h(
          "dd",
          {},
          item.assignment.userAssigned
            ? `Assigned to ${item.assignment.assignedTo ?? "?"} by ${item.assignment.assignedBy ?? "?"}${item.assignment.comment ? ` — “${item.assignment.comment}”` : ""}`
            : "Not assigned",
        ),
      );
    } catch (error) {
      replace(state, h("dt", {}, "State"), h("dd", { class: "error" }, describe(error)));
    }
  };

  const command = (name: string, done: string, extra: () => Record<string, string>) => async () => {
    replace(message, `${name}…`);
    try {
      await api(`${RELAY}/commands/${name}`, {
        body: { target: target(), user: userInput.value.trim(), comment: commentInput.value, ...extra() },
      });
      replace(message, done);
      changed();
    } catch (error) {
      replace(message, h("span", { class: "error", role: "alert" }, describe(error)));
    }
    await loadState();
  };

  replace(
    section,
    h("h2", { id: "actions-title" }, "Actions"),
    h(
      "form",
      { class: "controls", onsubmit: (e: Event) => e.preventDefault() },
      labelled("Item", targetSelect),
      labelled("Acting user", userInput),
      labelled("Comment", commentInput),
      labelled("Assign to", assigneeInput),
    ),
    h(
      "div",
      { class: "buttons" },
      button(
        "Snooze",
        command("snooze", "Snoozed.", () => ({ period: "Manual" })),
      ),
      button(
        "Unsnooze",
        command("unsnooze", "Unsnoozed.", () => ({})),
      ),
      button(
        "Assign",
        command("assign", "Assigned.", () => ({ assignedTo: assigneeInput.value.trim(), period: "Manual" })),
      ),
      button(
        "Unassign",
        command("unassign", "Unassigned.", () => ({})),
      ),
    ),
    message,
    state,
  );
  targetSelect.addEventListener("change", () => void loadState());
  void loadState();
  return { stop: () => {} };
}

function describe(error: unknown): string {
  return error instanceof ApiError ? `${error.title}: ${error.body}` : String(error);
}
