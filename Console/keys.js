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
    const toggle = h("button", { type: "button", class: "quiet small",
      "aria-label": `${disabling ? "Enable" : "Disable"} the key ${k.name}`,
      disabled: out || !(k.status === "active" || disabling), title: why }, disabling ? "Enable" : "Disable");
    toggle.addEventListener("click", async () => {
      const ok = await confirmDialog(disabling
        ? { title: `Enable ${k.name}'s key?`, body: [h("p", {}, "It is accepted again from its next request; its holder signs in to the console again.")],
          action: "Enable key" }
        : { title: `Disable ${k.name}'s key?`,
          body: [h("p", {}, "It is refused from its next request on and its console sessions end, until you enable it again. Revoke it instead if it must never work again.")],
          action: "Disable key" });
      if (!ok) { focusRow(k.id); return; }
      try {
        await api.post(`/admin/v1/keys/${encodeURIComponent(k.id)}/${disabling ? "enable" : "disable"}`, {});
        toast(`${disabling ? "Enabled" : "Disabled"} ${k.name}'s key.`);
        await keysScreen(session);
        focusRow(k.id);
      } catch (failure) {
        if (sessionLost(failure)) return;
        else toast(failure.message);
      }
    });
    const revoke = h("button", { type: "button", class: "quiet small", "aria-label": `Revoke the key ${k.name}`,
      disabled: out || k.status === "revoked", title: why }, "Revoke");
    revoke.addEventListener("click", async () => {
      const ok = await confirmDialog({
        title: `Revoke ${k.name}'s key?`,
        body: [h("p", {}, "It is refused from its next request on, and its console sessions end. This cannot be undone.")],
        action: "Revoke key",
      });
      if (!ok) { focusRow(k.id); return; }
      try {
        await api.post(`/admin/v1/keys/${encodeURIComponent(k.id)}/revoke`, {});
        toast(`Revoked ${k.name}'s key.`);
        await keysScreen(session);
        focusRow(k.id);
      } catch (failure) {
        if (sessionLost(failure)) return;
        else toast(failure.message);
      }
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
