// The console: sign-in, the header, and the router from the location's hash to a screen.
import { currentSession, signIn, signOut, APIError, SessionChanged } from "./api.js";
import { h, show, toast } from "./dom.js";
import { integrationsScreen, createScreen, overviewScreen, devicesScreen } from "./integrations.js";
import { debugTokensScreen } from "./debugtokens.js";
import { verificationsScreen } from "./verifications.js";
import { auditScreen } from "./audit.js";
import { keysScreen } from "./keys.js";
import { sessionsScreen } from "./sessions.js";
import { ownershipBanner } from "./ownership.js";

let session = null;

/** Signs in again after a session ended, then returns to `returnTo` (a location hash). */
function signInScreen(message, returnTo) {
  const error = h("p", { class: "error", id: "sign-in-error", role: "alert" }, message || "");
  const key = h("input", {
    id: "admin-key", name: "key", type: "password", autocomplete: "off", spellcheck: "false", required: true,
    "aria-describedby": "admin-key-help sign-in-error",
  });
  const form = h("form", { class: "card narrow", novalidate: true },
    h("h1", {}, "Sign in"),
    h("p", { class: "muted" }, "Use an admin key of your workspace. Your operator creates one with attestctl admin-key create."),
    h("div", { class: "field" },
      h("label", { for: "admin-key" }, "Admin key"),
      key,
      h("p", { class: "help", id: "admin-key-help" }, "Starts with adm_. It is sent once and exchanged for a session; it is not stored in the browser.")),
    error,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "sign-in" }, "Sign in")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    if (!key.value.startsWith("adm_")) {
      error.textContent = "An admin key starts with adm_.";
      key.focus();
      return;
    }
    try {
      session = await signIn(key.value.trim());
      key.value = "";
      chrome();
      const back = returnTo && returnTo !== "#/" ? returnTo : "#/integrations";
      if (location.hash === back) route();
      else location.hash = back;
    } catch (failure) {
      if (failure instanceof APIError && failure.status === 401) error.textContent = "This key is not valid: it is unknown or has been revoked.";
      else if (failure instanceof APIError && failure.status === 429) error.textContent = "Too many sign-ins: wait a minute, then try again.";
      else error.textContent = `Sign-in failed: ${failure.message}`;
      key.focus();
    }
  });
  show("Sign in", form);
  key.focus();
}

/** The header and navigation for the signed-in session. */
function chrome() {
  const who = document.getElementById("who");
  const out = document.getElementById("sign-out");
  const nav = document.getElementById("nav");
  const signedIn = session !== null;
  who.hidden = out.hidden = nav.hidden = !signedIn;
  document.getElementById("nav-keys").hidden = !(signedIn && session.can_manage_keys);
  if (signedIn) {
    who.replaceChildren(
      h("span", { class: "workspace" }, session.workspace_id), " · ", session.name, " · ",
      h("span", { class: "role" }, session.role.replace("_", " ")));
  }
  ownershipBanner(session, async () => {
    session = await currentSession();
    chrome();
    route();
  }).catch(() => { /* the banner is a courtesy: a failed look-up hides it, the page goes on */ });
}

function markSection(section) {
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.section === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function route() {
  if (session === null) {
    markSection("");
    signInScreen();
    return;
  }
  const parts = (location.hash.replace(/^#\/?/, "") || "integrations").split("/");
  try {
    if (parts[0] === "audit") {
      markSection("audit");
      await auditScreen();
    } else if (parts[0] === "sessions") {
      markSection("sessions");
      await sessionsScreen();
    } else if (parts[0] === "keys") {
      markSection("keys");
      await keysScreen(session);
    } else if (parts[0] === "integrations" && parts[1] === "new") {
      markSection("integrations");
      await createScreen(session);
    } else if (parts[0] === "integrations" && parts[1] && parts[2] === "devices") {
      markSection("integrations");
      await devicesScreen(session, decodeURIComponent(parts[1]));
    } else if (parts[0] === "integrations" && parts[1] && parts[2] === "verifications") {
      markSection("integrations");
      await verificationsScreen(session, decodeURIComponent(parts[1]));
    } else if (parts[0] === "integrations" && parts[1] && parts[2] === "debug-tokens") {
      markSection("integrations");
      await debugTokensScreen(session, decodeURIComponent(parts[1]));
    } else if (parts[0] === "integrations" && parts[1]) {
      markSection("integrations");
      await overviewScreen(session, decodeURIComponent(parts[1]));
    } else {
      markSection("integrations");
      await integrationsScreen(session);
    }
  } catch (failure) {
    if (failure instanceof APIError && failure.status === 401) {
      sessionEnded("Your session has ended. Sign in again to return to this page.");
      return;
    }
    if (failure instanceof SessionChanged) {
      sessionChanged();
      return;
    }
    show("Error", h("h1", {}, "Something went wrong"), h("p", { class: "error", role: "alert" }, failure.message),
      h("p", {}, h("a", { href: "#/integrations" }, "Back to App integrations")));
  }
}

document.getElementById("sign-out").addEventListener("click", async () => {
  try { await signOut(); } catch { /* the session may be gone already */ }
  session = null;
  chrome();
  location.hash = "";
  toast("Signed out.");
  route();
});

/** The session ended (idle, 8 hours, signed out elsewhere, key revoked): sign in again, then back here. */
function sessionEnded(message) {
  session = null;
  chrome();
  signInScreen(message, location.hash);
}

/** Another tab signed in with another key: this page shows nothing of it, and says so. */
function sessionChanged() {
  const reload = h("button", { type: "button", id: "reload-session" }, "Continue as the other key");
  reload.addEventListener("click", () => location.reload());
  show("Signed in elsewhere", h("h1", {}, "You signed in with another key"),
    h("p", { role: "alert", id: "session-changed" }, "This browser is now signed in with another admin key, in another tab or window. "
      + "Nothing was done here, and nothing of the other key's workspace is shown under this one's name."),
    h("div", { class: "actions start" }, reload));
}

window.addEventListener("attestd:session-lost", (event) => {
  if (event.detail.changed) sessionChanged();
  else sessionEnded("Your session has ended, so that was not done. Sign in again to return to this page and try it again.");
});
window.addEventListener("hashchange", route);
session = await currentSession();
chrome();
route();
