// Your sessions: where the signed-in key is signed in, and a way to end every other session
// (a lost laptop, a shared browser). Each ends by itself after its idle timeout or 8 hours.
import { api } from "./api.js";
import { h, show, when, toast } from "./dom.js";
import { guarded } from "./guard.js";

export async function sessionsScreen() {
  const { sessions, idle_timeout_seconds: idle, maximum_sessions: maximum } = await api.get("/console/sessions");
  const others = sessions.filter((s) => !s.current).length;
  const end = h("button", { type: "button", class: "danger", id: "end-other-sessions", disabled: others === 0 }, "Sign out everywhere else");
  end.addEventListener("click", guarded(async () => {
    const result = await api.post("/console/sessions/end-others", {});
    toast(`Ended ${result.ended} other session${result.ended === 1 ? "" : "s"}.`);
    await sessionsScreen();
    document.getElementById("end-other-sessions").focus();
  }));
  const table = h("table", { id: "sessions-table" },
    h("caption", { class: "visually-hidden" }, "Your sessions, newest first"),
    h("thead", {}, h("tr", {}, ["Signed in", "Ends at the latest", ""].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, sessions.map((s) => h("tr", { "data-session": s.id },
      h("td", {}, when(s.created_at)), h("td", {}, when(s.expires_at)),
      h("td", {}, s.current ? h("span", { class: "badge badge-active" }, "This browser") : "")))));
  show("Your sessions",
    h("div", { class: "heading" }, h("h1", {}, "Your sessions"), end),
    h("p", { class: "muted" }, `Sessions of this admin key. Each ends after ${Math.round(idle / 60)} minutes unused or 8 hours after `
      + `sign-in; a key holds at most ${maximum}, and a new sign-in ends the oldest beyond that.`),
    table);
}
