// Admin keys (owners): the workspace's keys, a new key shown once, expiry, last use, disabling
// and enabling, revocation.
import { api, APIError } from "./api.js";
import { h, show, when, badge, toast, confirmDialog, showSecretOnce } from "./dom.js";
import { sessionLost } from "./guard.js";
import { ownershipCard } from "./ownership.js";

const roles = ["user", "developer", "admin", "owner", "primary_owner"];
const label = (role) => role.replace("_", " ");
// The expiries offered at creation (seconds; "" is none), within what attestd accepts (1 h to 730 d).
const lifetimes = [["", "No expiry"], [7 * 86400, "7 days"], [30 * 86400, "30 days"], [90 * 86400, "90 days"],
  [365 * 86400, "1 year"]];

/** Focus back on the key's row after an action re-rendered the page: its first enabled action,
 * else the name field of the form above. */
function focusRow(id) {
  const target = document.querySelector(`tr[data-key="${id}"] .row-actions button:not([disabled])`)
    || document.getElementById("key-name");
  target?.focus();
}

/** A key's row button: `text`, confirmed (`body`, and the `leaked` box when asked for), then POST
 * /admin/v1/keys/ID/`verb`, the page again and focus back on the key's row. */
function keyAction(session, key, { verb, text, done, disabled, title, body, leaked }) {
  const button = h("button", { type: "button", class: "quiet small", "aria-label": `${text} the key ${key.name}`, disabled, title }, text);
  button.addEventListener("click", async () => {
    const box = h("input", { type: "checkbox", id: "key-leaked" });
    const extra = leaked ? [h("label", { class: "check", for: "key-leaked" }, box,
      " It leaked: also revoke every key it created, and the keys those created (yours stays).")] : [];
    const ok = await confirmDialog({ title: `${text} ${key.name}'s key?`, body: [h("p", {}, body), ...extra], action: `${text} key` });
    if (!ok) { focusRow(key.id); return; }
    try {
      const answer = await api.post(`/admin/v1/keys/${encodeURIComponent(key.id)}/${verb}`, box.checked ? { compromised: true } : {});
      const more = answer.revoked ? answer.revoked.length - 1 : 0;
      toast(`${done} ${key.name}'s key${more > 0 ? ` and ${more} key${more === 1 ? "" : "s"} it created` : ""}.`);
      await keysScreen(session);
      focusRow(key.id);
    } catch (failure) {
      if (!sessionLost(failure)) toast(failure.message);
    }
  });
  return button;
}

export async function keysScreen(session) {
  if (!session.can_manage_keys) {
    show("Admin keys", h("h1", {}, "Admin keys"), h("p", {}, "Only owners manage the workspace's admin keys."));
    return;
  }
  const { keys } = await api.get("/admin/v1/keys");
  const name = h("input", { id: "key-name", name: "name", maxlength: "100", autocomplete: "off", required: true,
    "aria-describedby": "key-name-error" });
  const mine = roles.indexOf(session.role);
  const role = h("select", { id: "key-role", name: "role" },
    roles.slice(0, mine + 1).map((r) => h("option", { value: r, selected: r === "developer" }, label(r))));
  const expiry = h("select", { id: "key-expiry", name: "expires_in" },
    lifetimes.map(([seconds, text]) => h("option", { value: String(seconds), selected: seconds === 90 * 86400 }, text)));
  const error = h("p", { class: "error", id: "key-name-error", role: "alert" });
  const issued = h("div", { id: "issued-key", "aria-live": "polite" });
  const form = h("form", { class: "card", novalidate: true },
    h("h2", {}, "Create an admin key"),
    h("div", { class: "field" }, h("label", { for: "key-name" }, "Name"), name,
      h("p", { class: "help" }, "Who will hold it: the audit log names every change after it.")),
    h("div", { class: "field" }, h("label", { for: "key-role" }, "Role"), role,
      h("p", { class: "help" }, "Users read; developers also make debug tokens; admins change integrations; owners also manage keys.")),
    h("div", { class: "field" }, h("label", { for: "key-expiry" }, "Expires"), expiry,
      h("p", { class: "help" }, "The key is refused from then on. A key for a person or a script that will not be needed forever should expire.")),
    error,
    h("div", { class: "actions start" }, h("button", { type: "submit", id: "create-key" }, "Create key")),
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
      const body = { name: name.value.trim(), role: role.value };
      if (expiry.value !== "") body.expires_in = Number(expiry.value);
      const made = await api.post("/admin/v1/keys", body);
      await keysScreen(session);
      showSecretOnce("issued-key", {
        notice: `Key for ${made.name} (${label(made.role)}). Copy it now: it is shown only once.`,
        value: made.key, id: "new-key", label: "The new admin key", copyID: "copy-new-key", copied: "Admin key copied.",
      });
    } catch (failure) {
      error.textContent = failure.message;
    }
  });
  const rows = keys.map((k) => {
    const cells = [
      h("td", {}, k.name), h("td", {}, label(k.role)), h("td", {}, badge(k.status)), h("td", {}, h("code", {}, k.id)),
      h("td", {}, when(k.created_at)), h("td", {}, k.expires_at ? when(k.expires_at) : "Never"),
      h("td", {}, k.last_used_at ? when(k.last_used_at) : "Never used"),
    ];
    const own = k.id === session.key_id;
    const out = own || roles.indexOf(k.role) > mine || k.role === "primary_owner";
    const why = own ? "The key you are signed in with" : false;
    const disabling = k.status === "disabled";
    const toggle = keyAction(session, k, {
      verb: disabling ? "enable" : "disable", text: disabling ? "Enable" : "Disable", done: disabling ? "Enabled" : "Disabled",
      disabled: out || !(k.status === "active" || disabling), title: why,
      body: disabling
        ? "It is accepted again from its next request; its holder signs in to the console again."
        : "It is refused from its next request on and its console sessions end, until you enable it again. Revoke it instead if it must never work again.",
    });
    const revoke = keyAction(session, k, {
      verb: "revoke", text: "Revoke", done: "Revoked", disabled: out || k.status === "revoked", title: why, leaked: true,
      body: "It is refused from its next request on, and its console sessions end. This cannot be undone.",
    });
    cells.push(h("td", {}, h("div", { class: "row-actions" }, toggle, revoke)));
    return h("tr", { "data-key": k.id }, cells);
  });
  const table = h("table", {},
    h("caption", { class: "visually-hidden" }, "Admin keys"),
    h("thead", {}, h("tr", {}, ["Name", "Role", "Status", "Key ID", "Created", "Expires", "Last used", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows));
  const ownership = await ownershipCard(session, keys, () => keysScreen(session));
  show("Admin keys", h("h1", {}, "Admin keys"),
    h("p", { class: "muted" }, "Keys of this workspace. A key is shown once, when it is created; attestd keeps only its hash."),
    form, table, ownership);
}
