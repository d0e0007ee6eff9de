// What an action does when it fails: it says so. A refusal shows its message; a session that
// ended, or that another tab replaced with another key's, is handed to the page (app.js), which
// says the action was not done and offers to sign in again.
import { APIError, SessionChanged } from "./api.js";
import { toast } from "./dom.js";

/**
 * A click handler whose failure is told, not lost: a refusal's message; a session that ended, or
 * that another tab replaced with another key's, is handed to the page (`sessionLost`), which says
 * the action was not done and offers to sign in again.
 */
export function guarded(handler) {
  return async (event) => {
    try {
      await handler(event);
    } catch (error) {
      if (!sessionLost(error)) toast(error.message);
    }
  };
}

/** Tells the page that `error` ended the session (true), or leaves it to the caller (false). */
export function sessionLost(error) {
  const ended = error instanceof APIError && error.status === 401;
  if (!ended && !(error instanceof SessionChanged)) return false;
  window.dispatchEvent(new CustomEvent("attestd:session-lost", { detail: { changed: !ended } }));
  return true;
}
