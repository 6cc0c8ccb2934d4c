/**
 * A tiny element builder for the console: `h("td", { class: "x" }, "text", child)`. Text is always
 * set as text nodes, never as HTML, so data from the hub cannot inject markup.
 */

export type Child = Node | string | number | null | undefined | false | readonly Child[];
type Attributes = Readonly<Record<string, string | number | boolean | null | undefined | EventListener>>;

/** Creates an element with attributes (`on…` keys add listeners; `false`/`null` leave one out). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

/** Appends children (nested arrays flattened, empty ones skipped). */
export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces every child of `parent`. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild !== null) parent.removeChild(parent.firstChild);
  append(parent, children);
}

/** A `<label>` around a control, so the control is named by the label's text. */
export function labelled(text: string, control: HTMLElement, hint?: string): HTMLLabelElement {
  return h(
    "label",
    { class: "field" },
    h("span", { class: "field-name" }, text),
    control,
    hint && h("small", {}, hint),
  );
}
