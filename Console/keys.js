// Admin keys (owners): the workspace's keys, a new key shown once, revocation.
import { api, APIError } from "./api.js";
import { h, show, when, badge, toast, confirmDialog, showSecretOnce } from "./dom.js";
import { sessionLost } from "./guard.js";

const roles = ["user", "developer", "admin", "owner", "primary_owner"];
const label = (role) => role.replace("_", " ");

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
  const error = h("p", { class: "error", id: "key-name-error", role: "alert" });
  const issued = h("div", { id: "issued-key", "aria-live": "polite" });
  const form = h("form", { class: "card", novalidate: true },
    h("h2", {}, "Create an admin key"),
    h("div", { class: "field" }, h("label", { for: "key-name" }, "Name"), name,
      h("p", { class: "help" }, "Who will hold it: the audit log names every change after it.")),
    h("div", { class: "field" }, h("label", { for: "key-role" }, "Role"), role,
      h("p", { class: "help" }, "Users read; developers also make debug tokens; admins change integrations; owners also manage keys.")),
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
      const made = await api.post("/admin/v1/keys", { name: name.value.trim(), role: role.value });
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
      h("td", {}, when(k.created_at)),
    ];
    const own = k.id === session.key_id;
    const revoke = h("button", { type: "button", class: "quiet small", "aria-label": `Revoke the key ${k.name}`,
      disabled: own || k.status !== "active" || roles.indexOf(k.role) > mine, title: own ? "The key you are signed in with" : false },
    "Revoke");
    revoke.addEventListener("click", async () => {
      const ok = await confirmDialog({
        title: `Revoke ${k.name}'s key?`,
        body: [h("p", {}, "It is refused from its next request on, and its console sessions end. This cannot be undone.")],
        action: "Revoke key",
      });
      if (!ok) return;
      try {
        await api.post(`/admin/v1/keys/${encodeURIComponent(k.id)}/revoke`, {});
        toast(`Revoked ${k.name}'s key.`);
        await keysScreen(session);
      } catch (failure) {
        if (sessionLost(failure)) return;
        else toast(failure.message);
      }
    });
    cells.push(h("td", {}, revoke));
    return h("tr", { "data-key": k.id }, cells);
  });
  const table = h("table", {},
    h("caption", { class: "visually-hidden" }, "Admin keys"),
    h("thead", {}, h("tr", {}, ["Name", "Role", "Status", "Key ID", "Created", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows));
  show("Admin keys", h("h1", {}, "Admin keys"),
    h("p", { class: "muted" }, "Keys of this workspace. A key is shown once, when it is created; attestd keeps only its hash."),
    form, table);
}
