// An integration's Debug tokens: for builds that cannot attest (the iOS Simulator, SwiftUI
// previews, CI). Developers and above create them (the secret shown once, with a copy button) and
// revoke them (every access token a debug token minted stops working at once); anyone reads the list.
import { api, APIError } from "./api.js";
import { h, show, when, badge, toast, confirmDialog, showSecretOnce } from "./dom.js";
import { header, path } from "./integrations.js";
import { guarded, sessionLost } from "./guard.js";

const lifetimes = [["1 day", 86400], ["7 days", 7 * 86400], ["30 days", 30 * 86400], ["90 days", 90 * 86400]];

function status(token) {
  if (token.revoked) return "revoked";
  return token.expires_at * 1000 <= Date.now() ? "expired" : "active";
}

function createForm(session, clientID) {
  const name = h("input", { id: "debug-name", name: "name", maxlength: "100", autocomplete: "off", required: true,
    "aria-describedby": "debug-name-error" });
  const lifetime = h("select", { id: "debug-lifetime", name: "expires_in" },
    lifetimes.map(([text, seconds]) => h("option", { value: String(seconds), selected: seconds === 30 * 86400 }, text)));
  const error = h("p", { class: "error", id: "debug-name-error", role: "alert" });
  const issued = h("div", { id: "issued-debug-token", "aria-live": "polite" });
  const form = h("form", { class: "card", novalidate: true },
    h("h2", {}, "Create a debug token"),
    h("div", { class: "field" }, h("label", { for: "debug-name" }, "Name"), name,
      h("p", { class: "help" }, "What it is for, e.g. \"CI\" or \"Alice's Simulator\".")),
    h("div", { class: "field" }, h("label", { for: "debug-lifetime" }, "Expires after"), lifetime),
    error,
    h("div", { class: "actions start" }, h("button", { type: "submit", id: "create-debug-token" }, "Create debug token")),
    issued);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    if (name.value.trim() === "") {
      error.textContent = "Enter a name.";
      name.focus();
      return;
    }
    try {
      const made = await api.post(path(clientID, "/debug-tokens"), { name: name.value.trim(), expires_in: Number(lifetime.value) });
      await debugTokensScreen(session, clientID);
      showSecretOnce("issued-debug-token", {
        notice: `Debug token ${made.name}, until ${when(made.expires_at)}. Copy it now: it is shown only once. `
          + "Keep it out of source control and release builds: pass it to CI as a secret.",
        value: made.secret, id: "new-debug-token", label: "The new debug token", copyID: "copy-debug-token", copied: "Debug token copied.",
      });
    } catch (failure) {
      if (sessionLost(failure)) return;
      else error.textContent = failure.message;
    }
  });
  return form;
}

function row(session, clientID, token) {
  const state = status(token);
  const cells = [
    h("td", {}, token.name), h("td", {}, badge(state)), h("td", {}, when(token.expires_at)),
    h("td", {}, token.last_used_at ? when(token.last_used_at) : "Never"), h("td", { class: "number" }, token.minted),
    h("td", {}, token.created_by), h("td", {}, h("code", {}, token.id)),
  ];
  if (session.can_manage_debug_tokens) {
    const revoke = h("button", { type: "button", class: "quiet small", "aria-label": `Revoke the debug token ${token.name}`,
      disabled: token.revoked }, "Revoke");
    revoke.addEventListener("click", guarded(async () => {
      const ok = await confirmDialog({
        title: `Revoke the debug token ${token.name}?`,
        body: [h("p", {}, "Every access token it minted stops working at once, and builds using it get no new ones. "
          + "This cannot be undone.")],
        action: "Revoke debug token",
      });
      if (!ok) return;
      await api.delete(path(clientID, `/debug-tokens/${encodeURIComponent(token.id)}`));
      toast(`Revoked the debug token ${token.name}.`);
      await debugTokensScreen(session, clientID);
    }));
    cells.push(h("td", {}, revoke));
  }
  return h("tr", { "data-debug-token": token.id }, cells);
}

export async function debugTokensScreen(session, clientID) {
  const integration = await api.get(path(clientID));
  const { debug_tokens: tokens } = await api.get(path(clientID, "/debug-tokens"));
  const columns = ["Name", "Status", "Expires", "Last used", "Tokens minted", "Created by", "ID"];
  if (session.can_manage_debug_tokens) columns.push("Actions");
  const table = tokens.length === 0
    ? h("p", { class: "empty" }, "No debug token yet.")
    : h("table", {},
      h("caption", { class: "visually-hidden" }, "Debug tokens"),
      h("thead", {}, h("tr", {}, columns.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, tokens.map((token) => row(session, clientID, token))));
  const intro = h("p", { class: "muted" },
    "A debug token lets a build that cannot attest (the iOS Simulator, previews, CI) get access tokens, marked as debug. "
    + "Never ship one in a release build.");
  const form = session.can_manage_debug_tokens && integration.status === "active" ? createForm(session, clientID) : null;
  show(`${integration.name} debug tokens`, header(integration, "debug-tokens"), intro, form, table);
}
