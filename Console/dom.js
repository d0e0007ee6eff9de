// Small DOM helpers. Every text a user or the API supplied goes in as a text node, never as
// HTML, so a name like <img onerror=...> is shown, not run.

/** An element: `attributes` (on* are listeners, `class`, booleans set or left off), children (strings become text). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/**
 * Gives each cell of the tables in `root` its column's name (`data-label`), which a narrow screen
 * shows beside the value when the table's rows become cards (console.css).
 */
export function labelTables(root) {
  for (const table of root.querySelectorAll("table")) {
    const names = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, index) => { if (names[index]) cell.setAttribute("data-label", names[index]); });
    }
  }
}

/** Replaces `main`'s content with `children`, titles the page and moves focus to its heading. */
export function show(title, ...children) {
  const main = document.getElementById("main");
  main.replaceChildren(...children.flat(Infinity));
  labelTables(main);
  document.title = `${title} · attestd Console`;
  const heading = main.querySelector("h1");
  if (heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus();
  }
}

/** A Unix time as the reader's local date and time. */
export function when(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  return new Date(seconds * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** A status badge. */
export function badge(status) {
  return h("span", { class: `badge badge-${status}` }, status);
}

/** A short message at the bottom of the page, read out by screen readers. */
export function toast(message) {
  const element = document.getElementById("toast");
  element.textContent = message;
  element.classList.add("visible");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => element.classList.remove("visible"), 4000);
}

/**
 * A modal confirmation: `title`, `body` nodes, the `action` button's label and, when `typed` is
 * given, a field whose value must equal it (`label` says what to type). Resolves true on confirm.
 */
export function confirmDialog({ title, body, action, typed, label }) {
  const dialog = document.getElementById("confirm");
  const input = document.getElementById("confirm-input");
  const ok = document.getElementById("confirm-ok");
  const error = document.getElementById("confirm-error");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-body").replaceChildren(...body);
  document.getElementById("confirm-field").hidden = typed === undefined;
  document.getElementById("confirm-label").textContent = label || "";
  ok.textContent = action;
  input.value = "";
  error.textContent = "";
  return new Promise((resolve) => {
    const finish = (value) => {
      dialog.removeEventListener("close", onClose);
      document.getElementById("confirm-form").removeEventListener("submit", onSubmit);
      document.getElementById("confirm-cancel").removeEventListener("click", onCancel);
      if (dialog.open) dialog.close();
      resolve(value);
    };
    const onSubmit = (event) => {
      if (typed !== undefined && input.value !== typed) {
        event.preventDefault();
        error.textContent = `Type ${typed} exactly to confirm.`;
        input.focus();
        return;
      }
      event.preventDefault();
      finish(true);
    };
    const onCancel = () => finish(false);
    const onClose = () => finish(false);
    dialog.addEventListener("close", onClose);
    document.getElementById("confirm-form").addEventListener("submit", onSubmit);
    document.getElementById("confirm-cancel").addEventListener("click", onCancel);
    dialog.showModal();
    (typed !== undefined ? input : document.getElementById("confirm-cancel")).focus();
  });
}

/**
 * Shows a new secret once in the element `where` (by id): `notice`, then the secret in a read-only
 * field (`id`, labelled `label`) with a Copy button (`copyID`) that toasts `copied`; focuses and
 * selects it. The console never shows it again: attestd keeps only its hash.
 */
export function showSecretOnce(where, { notice, value, id, label, copyID, copied }) {
  const secret = h("input", { id, readonly: true, value, class: "code", "aria-label": label });
  const copy = h("button", { type: "button", class: "quiet", id: copyID, "aria-label": `Copy ${label.replace(/^The /, "the ")}` }, "Copy");
  copy.addEventListener("click", async () => {
    try { await navigator.clipboard.writeText(value); } catch { secret.select(); document.execCommand("copy"); }
    toast(copied);
  });
  document.getElementById(where).replaceChildren(h("p", { class: "notice" }, notice), h("div", { class: "copyable" }, secret, copy));
  secret.focus();
  secret.select();
}
