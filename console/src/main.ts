/**
 * The vigil web console, served by the hub at `/`. Hash routes: `#/` (the entities,
 * with `?filter=…&groupBy=…`) and `#/entity/{id}`. With hub security on (`/console/config.json`
 * says so) it asks for an application key or a token first (session.ts).
 */
import "uplot/dist/uPlot.min.css";
import "./console.css";
import { type ApiError, errorOf } from "./api.js";
import { h, labelled, replace } from "./dom.js";
import { listState, showEntities } from "./entities-view.js";
import { showEntity } from "./entity-view.js";
import { onSessionEnd, signedIn, signInWithKey, signInWithToken, signOut, subject } from "./session.js";

interface ConsoleConfig {
  /** `hub.security.enabled`: every data request needs a token. */
  readonly security: boolean;
}

const main = document.getElementById("main") as HTMLElement;
const sessionNav = document.getElementById("session") as HTMLElement;
let config: ConsoleConfig = { security: false };
let stopView: () => void = () => {};

/** Shows the page the location hash names. */
function route(): void {
  stopView();
  stopView = () => {};
  if (config.security && !signedIn()) {
    showSignIn(undefined);
    return;
  }
  showSession();
  const hash = location.hash || "#/";
  const entity = /^#\/entity\/(\d+)$/.exec(hash);
  if (entity !== null) {
    document.title = "Entity — vigil console";
    stopView = showEntity(main, Number(entity[1]));
  } else {
    document.title = "Entities — vigil console";
    stopView = showEntities(main, listState(hash));
  }
}

function showSession(): void {
  if (!config.security) {
    replace(sessionNav);
    return;
  }
  replace(
    sessionNav,
    h("span", {}, `Signed in as ${subject() || "token holder"}`),
    " ",
    h("button", { type: "button", onclick: () => signOut() }, "Sign out"),
  );
}

/** The sign-in form: an application key (client id and secret) or a token. */
function showSignIn(reason: ApiError | undefined): void {
  stopView();
  stopView = () => {};
  replace(sessionNav);
  document.title = "Sign in — vigil console";
  const refusal = h("div", { class: "refusal", role: "alert" });
  if (reason !== undefined) replace(refusal, h("strong", {}, `${reason.title}: `), reason.body);
  const clientId = h("input", { name: "clientId", autocomplete: "username", required: true });
  const secret = h("input", {
    name: "secret",
    type: "password",
    autocomplete: "current-password",
    required: true,
  });
  const token = h("textarea", { name: "token", rows: 3, spellcheck: "false", required: true });
  const busy = (form: HTMLFormElement, on: boolean) => {
    for (const control of form.querySelectorAll("button")) control.disabled = on;
  };
  const attempt = (form: HTMLFormElement, work: () => Promise<void>) => async (event: Event) => {
    event.preventDefault();
    busy(form, true);
    replace(refusal);
    try {
      await work();
      route();
    } catch (error) {
      const e = error as ApiError;
      if (e.status === 401)
        replace(
          refusal,
          h("strong", {}, "Refused: "),
          `the hub did not accept ${form === keyForm ? "this client id and secret" : "this token"}. `,
          h("small", {}, `(${e.title}: ${e.body})`),
        );
      else replace(refusal, h("strong", {}, `${e.title ?? "Error"}: `), e.body ?? String(error));
    } finally {
      busy(form, false);
    }
  };
  const keyForm: HTMLFormElement = h("form", { class: "sign-in", "aria-labelledby": "key-title" });
  keyForm.addEventListener(
    "submit",
    attempt(keyForm, () => signInWithKey(clientId.value, secret.value)),
  );
  replace(
    keyForm,
    h("h2", { id: "key-title" }, "With an application key"),
    labelled("Client id", clientId),
    labelled("Client secret", secret),
    h("button", { type: "submit" }, "Sign in"),
  );
  const tokenForm: HTMLFormElement = h("form", { class: "sign-in", "aria-labelledby": "token-title" });
  tokenForm.addEventListener(
    "submit",
    attempt(tokenForm, () => signInWithToken(token.value.trim())),
  );
  replace(
    tokenForm,
    h("h2", { id: "token-title" }, "Or with a token"),
    labelled("Access token", token),
    h("button", { type: "submit" }, "Use token"),
  );
  replace(
    main,
    h("h1", {}, "Sign in"),
    h(
      "p",
      {},
      "This hub needs a token. It is kept in this tab's memory only and renewed before it expires; reloading the page signs you out.",
    ),
    refusal,
    h("div", { class: "sign-in-forms" }, keyForm, tokenForm),
  );
  clientId.focus();
}

async function boot(): Promise<void> {
  try {
    const response = await fetch("/console/config.json", { cache: "no-store", credentials: "omit" });
    if (!response.ok) throw await errorOf(response);
    config = (await response.json()) as ConsoleConfig;
  } catch (error) {
    const e = error as ApiError;
    replace(
      main,
      h("p", { class: "error", role: "alert" }, `The hub did not answer: ${e.body ?? String(error)}`),
    );
    return;
  }
  onSessionEnd((reason) => showSignIn(reason));
  window.addEventListener("hashchange", route);
  route();
}

void boot();
