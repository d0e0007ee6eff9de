// The workspace's audit log: who did what to what, newest first.
import { api } from "./api.js";
import { h, show, when } from "./dom.js";

export async function auditScreen() {
  const { entries } = await api.get("/admin/v1/audit");
  const table = entries.length === 0
    ? h("p", { class: "empty" }, "Nothing recorded yet.")
    : h("table", {},
      h("caption", { class: "visually-hidden" }, "Audit log"),
      h("thead", {}, h("tr", {}, ["When", "Who", "Action", "Target", "Detail"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, entries.slice().reverse().map((e) => h("tr", {},
        h("td", {}, when(e.at)), h("td", {}, e.actor), h("td", {}, h("code", {}, e.action)),
        h("td", {}, h("code", {}, e.target)), h("td", {}, e.detail)))));
  show("Audit log", h("h1", {}, "Audit log"), h("p", { class: "muted" }, "Every change made in this workspace, with the admin key behind it."), table);
}
