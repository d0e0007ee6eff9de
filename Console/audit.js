// The workspace's audit log: who did what to what, newest first, a page at a time, filtered by
// action, actor, target and time, and exported (CSV or JSON lines) as filtered.
import { api } from "./api.js";
import { h, show, when } from "./dom.js";
import { pager, query } from "./pages.js";
import { guarded } from "./guard.js";

const kinds = [
  ["changes", "Changes (not sign-ins)"], ["", "Everything"], ["sign-ins", "Sign-ins"],
  ["integration.suspend,integration.resume,integration.revoke,integration.update", "Integration changes"],
  ["device.block,device.unblock,token.revoke", "Blocked and unblocked devices, revoked tokens"],
  ["admin-key.create,admin-key.revoke", "Admin keys"], ["debug-token.create,debug-token.revoke", "Debug tokens"],
];

/** A date field's value (yyyy-mm-dd) as Unix seconds at the start (or the end) of that day, local time. */
function day(value, end) {
  if (!value) return "";
  const date = new Date(`${value}T00:00:00`);
  if (Number.isNaN(date.getTime())) return "";
  return Math.floor(date.getTime() / 1000) + (end ? 86399 : 0);
}

function filterField(id, label, control) {
  control.id = id;
  return h("div", { class: "filter" }, h("label", { for: id }, label), control);
}

export async function auditScreen() {
  const action = h("select", {}, kinds.map(([value, text]) => h("option", { value }, text)));
  const actor = h("input", { type: "search", placeholder: "Name or key ID", autocomplete: "off" });
  const target = h("input", { type: "search", placeholder: "Client ID, key ID…", autocomplete: "off" });
  const from = h("input", { type: "date" });
  const to = h("input", { type: "date" });
  const filters = () => ({
    action: action.value, actor: actor.value.trim(), target: target.value.trim(), from: day(from.value, false), to: day(to.value, true),
  });
  const exportCSV = h("a", { class: "button quiet", id: "audit-export-csv", download: "attestd-audit.csv" }, "Export CSV");
  const exportJSON = h("a", { class: "button quiet", id: "audit-export-jsonl", download: "attestd-audit.jsonl" }, "Export JSON lines");
  const table = (entries) => entries.length === 0
    ? h("p", { class: "empty" }, "Nothing recorded matches.")
    : h("table", { id: "audit-table" },
      h("caption", { class: "visually-hidden" }, "Audit log, newest first"),
      h("thead", {}, h("tr", {}, ["When", "Who", "Action", "Target", "Detail"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, entries.map((e) => h("tr", {},
        h("td", {}, when(e.at)), h("td", {}, e.actor), h("td", {}, h("code", {}, e.action)),
        h("td", {}, h("code", { class: "wrap" }, e.target)), h("td", {}, e.detail)))));
  const pages = pager({
    label: "Audit log",
    load: async (cursor) => {
      const body = await api.get(`/admin/v1/audit${query({ ...filters(), limit: 50, cursor })}`);
      return { rows: body.entries, next: body.next_cursor };
    },
    render: table,
  });
  const form = h("form", { class: "filters", id: "audit-filters", role: "search", "aria-label": "Filter the audit log" },
    filterField("audit-action", "Show", action), filterField("audit-actor", "Who", actor), filterField("audit-target", "Target", target),
    filterField("audit-from", "From", from), filterField("audit-to", "To", to),
    h("div", { class: "filter buttons" }, h("button", { type: "submit" }, "Filter")));
  const refresh = async () => {
    exportCSV.href = `/admin/v1/audit/export${query({ ...filters(), format: "csv" })}`;
    exportJSON.href = `/admin/v1/audit/export${query({ ...filters(), format: "jsonl" })}`;
    await pages.reload();
  };
  form.addEventListener("submit", guarded(async (event) => {
    event.preventDefault();
    await refresh();
  }));
  show("Audit log",
    h("div", { class: "heading" }, h("h1", {}, "Audit log"), h("div", { class: "actions" }, exportCSV, exportJSON)),
    h("p", { class: "muted" }, "Every change made in this workspace, newest first, with the admin key behind it. "
      + "Exports hold up to 10,000 rows of what the filters show."),
    form, pages.element);
  await refresh();
}
