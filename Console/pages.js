// A listing a page at a time: the API answers a bounded page and a next_cursor; the console
// keeps the cursors of the pages before, so Newer goes back and Older goes on.
import { h, labelTables } from "./dom.js";
import { guarded } from "./guard.js";

/**
 * A pager over `load(cursor)` (which answers `{ rows, next }`): `render(rows)` draws one page
 * into `region`. Returns `{ element, reload }`: the region with its Newer/Older buttons, and a
 * function that starts again from the first page (after a filter changed).
 */
export function pager({ load, render, label }) {
  const region = h("div", { class: "page-region", "aria-live": "polite" });
  const newer = h("button", { type: "button", class: "quiet small", id: "page-newer" }, "Newer");
  const older = h("button", { type: "button", class: "quiet small", id: "page-older" }, "Older");
  const position = h("span", { class: "muted", id: "page-position" });
  const before = [];
  let current = null;
  let next = null;

  async function draw(cursor) {
    const page = await load(cursor);
    current = cursor;
    next = page.next;
    region.replaceChildren(render(page.rows));
    labelTables(region);
    newer.disabled = before.length === 0;
    older.disabled = !next;
    position.textContent = `${label}, page ${before.length + 1}`;
  }

  newer.addEventListener("click", guarded(async () => {
    const cursor = before.pop();
    await draw(cursor === undefined ? null : cursor);
    newer.disabled ? older.focus() : newer.focus();
  }));
  older.addEventListener("click", guarded(async () => {
    if (!next) return;
    before.push(current);
    await draw(next);
    older.disabled ? newer.focus() : older.focus();
  }));

  const element = h("div", {}, region, h("div", { class: "pager" }, newer, position, older));
  return {
    element,
    reload: async () => {
      before.length = 0;
      await draw(null);
    },
  };
}

/** A query string of `fields` whose values are not empty. */
export function query(fields) {
  const parts = Object.entries(fields).filter(([, value]) => value !== "" && value !== null && value !== undefined)
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`);
  return parts.length === 0 ? "" : `?${parts.join("&")}`;
}
