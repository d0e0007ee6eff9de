// App integrations: the list, Create app integration, an integration's Overview (with Revoke)
// and its Devices (its Debug tokens: debugtokens.js).
import { api, APIError } from "./api.js";
import { guarded, sessionLost } from "./guard.js";
import { h, show, when, badge, toast, confirmDialog } from "./dom.js";
import { pager, query } from "./pages.js";

export { guarded, sessionLost } from "./guard.js";

const teamPattern = /^[A-Z0-9]{10}$/;
const bundlePattern = /^[A-Za-z0-9.-]{1,155}$/;
const environments = { production: "Production", development: "Development", both: "Production and development" };

export const path = (clientID, rest = "") => `/admin/v1/integrations/${encodeURIComponent(clientID)}${rest}`;

export async function integrationsScreen(session) {
  const { integrations } = await api.get("/admin/v1/integrations");
  const create = session.can_change
    ? h("a", { class: "button", href: "#/integrations/new", id: "create-integration" }, "Create app integration") : null;
  const table = integrations.length === 0
    ? h("p", { class: "empty" }, "No app integrations yet.", session.can_change ? " Create one to give an app its client ID." : "")
    : h("table", {},
      h("caption", { class: "visually-hidden" }, "App integrations"),
      h("thead", {}, h("tr", {}, ["Name", "Client ID", "Status", "Devices", "Live tokens", "Created"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, integrations.map((i) => h("tr", { "data-client-id": i.client_id },
        h("td", {}, h("a", { href: `#/integrations/${encodeURIComponent(i.client_id)}` }, i.name)),
        h("td", {}, h("code", {}, i.client_id)),
        h("td", {}, badge(i.status)),
        h("td", { class: "number" }, i.devices),
        h("td", { class: "number" }, i.live_tokens),
        h("td", {}, when(i.created_at))))));
  show("App integrations", h("div", { class: "heading" }, h("h1", {}, "App integrations"), create), table);
}

/** A labelled field with its help and its inline message. */
function field(id, label, control, help) {
  control.id = id;
  control.setAttribute("aria-describedby", `${id}-help ${id}-error`);
  return h("div", { class: "field" }, h("label", { for: id }, label), control,
    h("p", { class: "help", id: `${id}-help` }, help), h("p", { class: "error", id: `${id}-error`, role: "alert" }));
}

function setError(id, message) {
  const element = document.getElementById(`${id}-error`);
  element.textContent = message || "";
  document.getElementById(id).setAttribute("aria-invalid", message ? "true" : "false");
}

export async function createScreen(session) {
  if (!session.can_change) {
    show("Create app integration", h("h1", {}, "Create app integration"),
      h("p", {}, "Your role (", session.role, ") may view integrations but not create them."));
    return;
  }
  const name = h("input", { name: "name", maxlength: "200", autocomplete: "off", required: true });
  const team = h("input", { name: "team_id", maxlength: "10", autocomplete: "off", spellcheck: "false", required: true });
  const bundles = h("textarea", { name: "bundle_ids", rows: "3", spellcheck: "false", required: true });
  const environment = h("select", { name: "environment" },
    Object.entries(environments).map(([value, label]) => h("option", { value }, label)));
  const failure = h("p", { class: "error", role: "alert", id: "create-error" });
  const submit = h("button", { type: "submit", id: "create-submit" }, "Create app integration");
  const form = h("form", { class: "card", novalidate: true },
    field("name", "Name", name, "For people: shown in this console and the audit log."),
    field("team_id", "Apple Developer Team ID", team, "10 characters, upper-case letters and digits, as in your Apple Developer account."),
    field("bundle_ids", "Bundle IDs", bundles, "One per line, 1 to 32, e.g. com.example.app."),
    field("environment", "App Attest environment", environment,
      "Production: App Store and TestFlight builds. Development: only development-signed builds (run from Xcode). "
        + "Production and development: both."),
    failure,
    h("div", { class: "actions" }, h("a", { class: "button quiet", href: "#/integrations" }, "Cancel"), submit));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    failure.textContent = "";
    const list = bundles.value.split(/[\s,]+/).filter((b) => b.length > 0);
    const checks = {
      name: name.value.trim() === "" ? "Enter a name." : "",
      team_id: teamPattern.test(team.value) ? "" : "A Team ID is 10 upper-case letters and digits, e.g. ABCDE12345.",
      bundle_ids: list.length === 0 ? "Enter at least one bundle ID."
        : list.length > 32 ? `At most 32 bundle IDs (${list.length} entered).`
        : list.find((b) => !bundlePattern.test(b)) ? `“${list.find((b) => !bundlePattern.test(b))}” is not a bundle ID.` : "",
    };
    for (const [id, message] of Object.entries(checks)) setError(id, message);
    const first = Object.keys(checks).find((id) => checks[id]);
    if (first) {
      document.getElementById(first).focus();
      return;
    }
    submit.disabled = true;
    try {
      const created = await api.post("/admin/v1/integrations",
        { name: name.value.trim(), team_id: team.value, bundle_ids: list, environment: environment.value });
      toast(`Created ${created.name}.`);
      location.hash = `#/integrations/${encodeURIComponent(created.client_id)}`;
    } catch (error) {
      submit.disabled = false;
      if (sessionLost(error)) return;
      const fieldOf = { team_id: "team_id", bundle_id: "bundle_ids", bundle_id_count: "bundle_ids", bundle_id_duplicate: "bundle_ids", name: "name" };
      if (error instanceof APIError && fieldOf[error.reason]) {
        setError(fieldOf[error.reason], error.message);
        document.getElementById(fieldOf[error.reason]).focus();
      } else {
        failure.textContent = error.message;
      }
    }
  });
  show("Create app integration", h("h1", {}, "Create app integration"), form);
}

function tabs(clientID, current) {
  const base = `#/integrations/${encodeURIComponent(clientID)}`;
  return h("nav", { class: "tabs", "aria-label": "Integration" },
    h("a", { href: base, "aria-current": current === "overview" ? "page" : false }, "Overview"),
    h("a", { href: `${base}/verifications`, "aria-current": current === "verifications" ? "page" : false }, "Verifications"),
    h("a", { href: `${base}/devices`, "aria-current": current === "devices" ? "page" : false }, "Devices"),
    h("a", { href: `${base}/debug-tokens`, "aria-current": current === "debug-tokens" ? "page" : false }, "Debug tokens"));
}

/** An integration's title, status and tabs (`current` names the tab shown). */
export function header(integration, current) {
  return [
    h("p", { class: "crumbs" }, h("a", { href: "#/integrations" }, "App integrations"), " / "),
    h("div", { class: "heading" }, h("h1", {}, integration.name), badge(integration.status)),
    tabs(integration.client_id, current),
  ];
}

function limit(value) { return value === null || value === undefined ? "No limit" : String(value); }

export async function overviewScreen(session, clientID) {
  const integration = await api.get(path(clientID));
  const { debug_tokens: debugTokens } = await api.get(path(clientID, "/debug-tokens"));
  const liveDebugTokens = debugTokens.filter((t) => !t.revoked && t.expires_at * 1000 > Date.now()).length;
  const clientIDField = h("input", { id: "client-id", readonly: true, value: integration.client_id, class: "code", "aria-label": "Client ID" });
  const copy = h("button", { type: "button", id: "copy-client-id", class: "quiet", "aria-label": "Copy the client ID" }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(integration.client_id);
    } catch {
      clientIDField.select();
      document.execCommand("copy");
    }
    toast("Client ID copied.");
  });
  const rows = [
    ["Client ID", h("div", { class: "copyable" }, clientIDField, copy)],
    ["Workspace", integration.workspace_id],
    ["Apple Developer Team ID", h("code", {}, integration.team_id)],
    ["Bundle IDs", h("ul", { class: "plain" }, integration.bundle_ids.map((b) => h("li", {}, h("code", {}, b))))],
    ["Environment", environments[integration.environment]],
    ["Status", badge(integration.status)],
    ["Created", when(integration.created_at)],
    ["Valid receipt required", integration.policy.require_valid_receipt ? "Yes" : "No"],
    ["Highest risk metric accepted", limit(integration.policy.max_risk_metric)],
    ["New keys per hour", limit(integration.policy.max_new_keys_per_hour)],
    ["Live tokens per device", limit(integration.policy.max_live_tokens_per_device)],
    ["Live debug tokens", h("a", { href: `#/integrations/${encodeURIComponent(clientID)}/debug-tokens`, id: "live-debug-tokens" },
      String(liveDebugTokens))],
  ];
  const stopped = await whoStopped(integration);
  if (stopped) rows.splice(6, 0, [integration.status === "revoked" ? "Revoked" : "Suspended", stopped]);
  const details = h("dl", { class: "details" }, rows.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]));
  const actions = [];
  if (session.can_change && integration.status !== "revoked") {
    actions.push(policyForm(session, integration));
    const suspended = integration.status === "suspended";
    const pause = h("button", { type: "button", class: "quiet", id: suspended ? "resume" : "suspend" }, suspended ? "Resume" : "Suspend");
    pause.addEventListener("click", guarded(async () => {
      if (!suspended) {
        const ok = await confirmDialog({
          title: `Suspend ${integration.name}?`,
          body: [h("ul", {},
            h("li", {}, "Every live access token of this app is refused at once: its users' requests to your API fail."),
            h("li", {}, "Its devices cannot get new tokens, and new devices cannot attest, until you resume it."),
            h("li", {}, "Nothing is deleted: Resume lets the same tokens and devices through again."))],
          action: "Suspend integration",
        });
        if (!ok) return;
      }
      await api.post(path(clientID, suspended ? "/resume" : "/suspend"), {});
      toast(suspended ? "Resumed." : "Suspended: its tokens and devices are refused until resumed.");
      await overviewScreen(session, clientID);
    }));
    const revoke = h("button", { type: "button", class: "danger", id: "revoke" }, "Revoke");
    revoke.addEventListener("click", guarded(() => revokeIntegration(session, clientID)));
    actions.push(h("section", { class: "card danger-zone", "aria-labelledby": "danger-title" },
      h("h2", { id: "danger-title" }, "Stop this app"),
      h("p", {}, "Suspend refuses its tokens and devices until you resume it. Revoke is permanent."),
      h("div", { class: "actions start" }, pause, revoke)));
  }
  show(integration.name, header(integration, "overview"), h("section", { class: "card" }, details), actions);
}

/** Who suspended or revoked the integration, and when (from the audit log); null when active. */
async function whoStopped(integration) {
  if (integration.status === "active") return null;
  const action = integration.status === "revoked" ? "integration.revoke" : "integration.suspend";
  const at = integration.status === "revoked" ? integration.revoked_at : integration.suspended_at;
  const { entries } = await api.get(`/admin/v1/audit${query({ action, target: integration.client_id, limit: 1 })}`);
  const entry = entries.find((e) => e.target === integration.client_id);
  return h("span", { id: "stopped-by" }, entry ? `${when(entry.at)} by ${entry.actor}` : when(at));
}

/** The integration's policy, edited in place: each limit a whole number in its range, or empty for none. */
function policyForm(session, integration) {
  const current = integration.policy;
  const receipt = h("input", { type: "checkbox", id: "policy-receipt", checked: current.require_valid_receipt });
  const number = (id, value, min, max) => h("input", { type: "number", id, min, max, step: "1", inputmode: "numeric",
    value: value ?? "", placeholder: "No limit", "aria-describedby": `${id}-help ${id}-error` });
  const limits = [
    ["policy-risk", "Highest risk metric accepted", "max_risk_metric", 0, 1_000_000,
      "Apple's count of keys attested for the app on this device in 30 days; above it, refreshes are refused."],
    ["policy-keys", "New keys per hour", "max_new_keys_per_hour", 1, 1_000_000, "Attestations of new keys, for the whole app."],
    ["policy-tokens", "Live tokens per device", "max_live_tokens_per_device", 1, 1000, "A device's older tokens end when it gets more."],
  ].map(([id, label, member, min, max, help]) => ({ id, label, member, min, max, help, input: number(id, current[member], min, max) }));
  const save = h("button", { type: "submit", id: "policy-save" }, "Save policy");
  const form = h("form", { class: "card", id: "policy-form", novalidate: true, "aria-labelledby": "policy-title" },
    h("h2", { id: "policy-title" }, "Policy"),
    h("div", { class: "field checkbox" }, receipt, h("label", { for: "policy-receipt" }, "Require a valid receipt")),
    limits.map((l) => field(l.id, l.label, l.input, `${l.help} Empty: no limit.`)),
    h("div", { class: "actions start" }, save));
  form.addEventListener("submit", guarded(async (event) => {
    event.preventDefault();
    const body = { require_valid_receipt: receipt.checked };
    let first = null;
    for (const l of limits) {
      const text = l.input.value.trim();
      const value = text === "" ? null : Number(text);
      const bad = value !== null && (!Number.isInteger(value) || value < l.min || value > l.max);
      setError(l.id, bad ? `A whole number from ${l.min} to ${l.max}, or empty for no limit.` : "");
      if (bad && !first) first = l.input;
      body[l.member] = value;
    }
    if (first) {
      first.focus();
      return;
    }
    await api.post(path(integration.client_id, "/policy"), body);
    toast("Policy saved.");
    await overviewScreen(session, integration.client_id);
    document.getElementById("policy-save")?.focus();
  }));
  return form;
}

async function revokeIntegration(session, clientID) {
  const integration = (await api.get("/admin/v1/integrations")).integrations.find((i) => i.client_id === clientID);
  if (!integration) return;
  const confirmed = await confirmDialog({
    title: `Revoke ${integration.name}?`,
    body: [
      h("p", {}, "This is permanent and cannot be undone."),
      h("ul", {},
        h("li", {}, `Its ${integration.live_tokens} live access tokens stop working at once.`),
        h("li", {}, `Its ${integration.devices} devices are blocked and can never get new tokens.`),
        h("li", {}, "Its client ID ", h("code", {}, clientID), " is never reused; the app needs a new integration.")),
    ],
    action: "Revoke integration",
    typed: integration.name,
    label: `Type the integration's name (${integration.name}) to confirm`,
  });
  if (!confirmed) return;
  const result = await api.post(path(clientID, "/revoke"), { confirm: clientID });
  toast(`Revoked ${integration.name}: ${result.tokens_revoked} tokens revoked, ${result.devices_blocked} devices blocked.`);
  overviewScreen(session, clientID);
}

/** Focus back on the device's row after an action re-rendered the page: its first enabled action,
 * else the search field above the list. */
function focusRow(keyID) {
  const target = document.querySelector(`tr[data-key-id="${keyID}"] .row-actions button:not([disabled])`)
    || document.getElementById("device-search");
  target?.focus();
}

export async function devicesScreen(session, clientID) {
  const integration = await api.get(path(clientID));
  const search = h("input", { type: "search", id: "device-search", placeholder: "Hex prefix or base64 key ID", autocomplete: "off",
    spellcheck: "false", "aria-describedby": "device-search-help" });
  const status = h("select", { id: "device-status" },
    h("option", { value: "" }, "All"), h("option", { value: "active" }, "Active"), h("option", { value: "blocked" }, "Blocked"));
  const sort = h("select", { id: "device-sort" },
    h("option", { value: "newest" }, "Newest first"), h("option", { value: "last_seen" }, "Last seen first"));
  const columns = ["Key ID", "Status", "Environment", "Counter", "Receipt", "Risk metric", "Live tokens", "Attested", "Last seen"];
  if (session.can_change) columns.push("Actions");
  const row = (d) => {
    const cells = [
      h("td", {}, h("code", { title: d.key_id }, `${d.key_id.slice(0, 12)}…`)),
      h("td", {}, badge(d.status)), h("td", {}, d.environment), h("td", { class: "number" }, d.counter),
      h("td", {}, d.receipt_verdict || "—"), h("td", { class: "number" }, d.risk_metric ?? "—"),
      h("td", { class: "number" }, d.live_tokens), h("td", {}, when(d.created_at)), h("td", {}, when(d.updated_at)),
    ];
    if (session.can_change) {
      const block = h("button", { type: "button", class: "quiet small", "aria-label": `Block device ${d.key_id.slice(0, 12)}`,
        disabled: d.status !== "active" }, "Block");
      block.addEventListener("click", guarded(async () => {
        const ok = await confirmDialog({
          title: "Block this device?",
          body: [h("p", {}, "Device ", h("code", { class: "wrap" }, d.key_id), ` (attested ${when(d.created_at)}): its ${d.live_tokens} `
            + "live tokens stop working at once and this key cannot refresh or attest again"
            + (session.can_unblock_devices ? " until it is unblocked here." : ": only the operator can unblock it.")
            + " The app gets a new key only if it deliberately starts over (resetKey), within the integration's policy.")],
          action: "Block device",
        });
        if (!ok) return;
        const result = await api.post(`/admin/v1/devices/${d.key_id}/block`, {});
        toast(`Device ${d.key_id.slice(0, 12)}… blocked: ${result.tokens_revoked} tokens revoked.`);
        await pages.reload();
        focusRow(d.key_id);
      }));
      const unblock = h("button", { type: "button", class: "quiet small", "aria-label": `Unblock device ${d.key_id.slice(0, 12)}` },
        "Unblock");
      unblock.addEventListener("click", guarded(async () => {
        const ok = await confirmDialog({
          title: "Unblock this device?",
          body: [h("p", {}, "Device ", h("code", { class: "wrap" }, d.key_id), ` (attested ${when(d.created_at)}) may refresh again `
            + "with its key. The tokens revoked when it was blocked stay revoked.")],
          action: "Unblock device",
        });
        if (!ok) return;
        await api.post(`/admin/v1/devices/${d.key_id}/unblock`, {});
        toast(`Device ${d.key_id.slice(0, 12)}… unblocked.`);
        await pages.reload();
        focusRow(d.key_id);
      }));
      const tokens = h("button", { type: "button", class: "quiet small", "aria-expanded": "false",
        "aria-label": `Live tokens of device ${d.key_id.slice(0, 12)}`, disabled: d.live_tokens === 0 }, "Tokens");
      tokens.addEventListener("click", guarded(() => toggleTokens(tokens, d)));
      const lever = d.status !== "active" && session.can_unblock_devices ? unblock : block;
      cells.push(h("td", { class: "row-actions" }, lever, tokens));
    }
    return h("tr", { "data-key-id": d.key_id }, cells);
  };
  /** Shows or hides the device's live tokens under its row, each with a Revoke button. */
  const toggleTokens = async (button, d) => {
    const row = button.closest("tr");
    const open = row.nextElementSibling?.classList.contains("tokens-row");
    if (open) {
      row.nextElementSibling.remove();
      button.setAttribute("aria-expanded", "false");
      return;
    }
    const { tokens } = await api.get(`/admin/v1/devices/${d.key_id}/tokens`);
    const list = h("ul", { class: "plain token-list" }, tokens.map((t) => {
      const revoke = h("button", { type: "button", class: "quiet small", "aria-label": `Revoke token ${t.sha256.slice(0, 12)}` }, "Revoke");
      revoke.addEventListener("click", guarded(async () => {
        const ok = await confirmDialog({
          title: "Revoke this access token?",
          body: [h("p", {}, `Token ${t.sha256.slice(0, 12)}… of device ${d.key_id.slice(0, 12)}… (until ${when(t.expires_at)}) is refused `
            + "from the next request on, on every node. The device keeps its key and gets a new token at its next refresh.")],
          action: "Revoke token",
        });
        if (!ok) return;
        await api.post("/admin/v1/tokens/revoke", { sha256: t.sha256 });
        toast(`Token ${t.sha256.slice(0, 12)}… revoked.`);
        revoke.closest("li").remove();
        button.focus();
      }));
      return h("li", { "data-token": t.sha256 }, h("code", {}, `${t.sha256.slice(0, 12)}…`), " ",
        `issued ${when(t.issued_at)}, until ${when(t.expires_at)}${t.debug ? " (debug)" : ""} `, revoke);
    }));
    const detail = h("tr", { class: "tokens-row" }, h("td", { colspan: String(columns.length) },
      tokens.length === 0 ? "No live token." : list));
    row.after(detail);
    button.setAttribute("aria-expanded", "true");
  };
  const table = (devices) => devices.length === 0
    ? h("p", { class: "empty" }, search.value || status.value ? "No device matches." : "No device has attested with this integration yet.")
    : h("table", { id: "devices-table" },
      h("caption", { class: "visually-hidden" }, sort.value === "last_seen" ? "Devices, last seen first" : "Devices, newest first"),
      h("thead", {}, h("tr", {}, columns.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, devices.map(row)));
  const pages = pager({
    label: "Devices",
    load: async (cursor) => {
      const body = await api.get(path(clientID,
        `/devices${query({ key_id: search.value.trim(), status: status.value, sort: sort.value, limit: 50, cursor })}`));
      return { rows: body.devices, next: body.next_cursor };
    },
    render: table,
  });
  const form = h("form", { class: "filters", id: "device-filters", role: "search", "aria-label": "Find devices" },
    h("div", { class: "filter wide" }, h("label", { for: "device-search" }, "Key ID"), search,
      h("p", { class: "help", id: "device-search-help" }, "The start of the key ID in hex, as listed, or the whole key ID in base64, as the app has it.")),
    h("div", { class: "filter" }, h("label", { for: "device-status" }, "Status"), status),
    h("div", { class: "filter" }, h("label", { for: "device-sort" }, "Order"), sort),
    h("div", { class: "filter buttons" }, h("button", { type: "submit" }, "Find")));
  form.addEventListener("submit", guarded(async (event) => {
    event.preventDefault();
    await pages.reload();
  }));
  show(`${integration.name} devices`, header(integration, "devices"), form, pages.element);
  await pages.reload();
}
