// An integration's Verifications: attestations and assertions verified, refusals by reason and
// access tokens minted, per hour over 24 hours or per day over 30 days (what every node counted and
// added at its last purge tick, about a minute behind). A chart, the reasons, and the table behind
// the chart for screen readers and for copying.
import { api } from "./api.js";
import { h, show } from "./dom.js";
import { header, path } from "./integrations.js";

const ranges = [["24h", "24 hours"], ["30d", "30 days"]];

/** A bucket's label: the hour (local time) or the day. */
function label(seconds, range) {
  const date = new Date(seconds * 1000);
  return range === "24h"
    ? date.toLocaleString(undefined, { weekday: "short", hour: "2-digit", minute: "2-digit" })
    : date.toLocaleDateString(undefined, { month: "short", day: "numeric" });
}

/** Columns of verified (below) and refused (above) per bucket, scaled to the busiest bucket. */
function chart(series) {
  const busiest = Math.max(1, ...series.buckets.map((b) => b.verified + b.refused));
  const verified = series.buckets.reduce((n, b) => n + b.verified, 0);
  const refused = series.buckets.reduce((n, b) => n + b.refused, 0);
  const columns = series.buckets.map((b) => {
    const ok = h("span", { class: "bar-ok" });
    const bad = h("span", { class: "bar-refused" });
    // CSSOM, not a style attribute: the console's Content-Security-Policy allows no inline style.
    ok.style.height = `${(100 * b.verified) / busiest}%`;
    bad.style.height = `${(100 * b.refused) / busiest}%`;
    return h("span", { class: "bar", title: `${label(b.start, series.range)}: ${b.verified} verified, ${b.refused} refused` }, bad, ok);
  });
  return h("figure", { class: "card chart-card" },
    h("div", { class: "chart", id: "verification-chart", role: "img",
      "aria-label": `${verified} verified and ${refused} refused over the last ${series.range === "24h" ? "24 hours" : "30 days"}` },
    columns),
    h("figcaption", { class: "legend" },
      h("span", { class: "key key-ok" }), `Verified (${verified})`, h("span", { class: "key key-refused" }), `Refused (${refused})`));
}

export async function verificationsScreen(session, clientID, range = "24h") {
  const integration = await api.get(path(clientID));
  const series = await api.get(path(clientID, `/verifications?range=${range}`));
  const switcher = h("div", { class: "segmented", role: "group", "aria-label": "Range" },
    ranges.map(([value, text]) => {
      const button = h("button", { type: "button", class: "quiet small", id: `range-${value}`, "aria-pressed": String(value === range) }, text);
      button.addEventListener("click", async () => {
        await verificationsScreen(session, clientID, value);
        document.getElementById(`range-${value}`)?.focus();
      });
      return button;
    }));
  const reasons = Object.entries(series.refusals);
  const busy = series.buckets.filter((b) => b.verified + b.refused + b.tokens > 0).reverse();
  const reasonTable = reasons.length === 0
    ? h("p", { class: "muted", id: "no-refusals" }, "No refusals in this range.")
    : h("table", { id: "refusal-reasons" },
      h("caption", {}, "Refusals by reason"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Reason"), h("th", { scope: "col" }, "Refusals"))),
      h("tbody", {}, reasons.map(([reason, count]) => h("tr", {}, h("td", {}, h("code", {}, reason)), h("td", {}, String(count))))));
  const bucketTable = busy.length === 0
    ? h("p", { class: "empty" }, "No verifications in this range yet. Counts reach this page about a minute after they happen.")
    : h("table", { id: "verification-table" },
      h("caption", {}, range === "24h" ? "Per hour, newest first" : "Per day, newest first"),
      h("thead", {}, h("tr", {}, ["When", "Verified", "Refused", "Tokens minted"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, busy.map((b) => h("tr", {},
        h("td", {}, label(b.start, range)), h("td", {}, String(b.verified)), h("td", {}, String(b.refused)), h("td", {}, String(b.tokens))))));
  show(`${integration.name}: verifications`, header(integration, "verifications"),
    h("div", { class: "toolbar" }, h("p", { class: "muted" },
      "Attestations and assertions verified or refused, and access tokens minted (debug tokens' included)."), switcher),
    chart(series), reasonTable, bucketTable);
}
