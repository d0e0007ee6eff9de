// The admin API as the console calls it: same origin, the session cookie (HttpOnly: this script
// never sees it) and the session's CSRF token on every change.

let csrf = "";
/** The key this page signed in with: an answer for another key (a sign-in in another tab) is not shown. */
let signedInKey = "";

/** A refusal of the API: its HTTP status and problem document. */
export class APIError extends Error {
  constructor(status, problem) {
    super(problem.detail || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || "";
    this.reason = problem.reason || "";
  }
}

/** The browser's session now belongs to another key (signed in in another tab): nothing was done or shown. */
export class SessionChanged extends Error {
  constructor(keyID) {
    super("You signed in with another admin key in another tab or window.");
    this.keyID = keyID;
  }
}

async function send(method, path, body, retried = false) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    headers["X-CSRF-Token"] = csrf;
  }
  const response = await fetch(path, {
    method, headers, credentials: "same-origin", cache: "no-store",
    body: method === "GET" ? undefined : JSON.stringify(body || {}),
  });
  let data = {};
  try { data = await response.json(); } catch { data = {}; }
  const answeredFor = response.headers.get("Attestd-Key-Id");
  if (signedInKey && answeredFor && answeredFor !== signedInKey) throw new SessionChanged(answeredFor);
  if (response.status === 403 && data.reason === "csrf" && !retried) {
    // The cookie is another session's: a sign-in in another tab. The same key: go on with its
    // session (nothing was done, so the change is sent once more); another key: stop.
    const now = await send("GET", "/console/session", undefined, true);
    if (!now.signed_in) throw new APIError(401, { detail: "Your session has ended." });
    if (now.key_id !== signedInKey) throw new SessionChanged(now.key_id);
    csrf = now.csrf_token;
    return send(method, path, body, true);
  }
  if (!response.ok) throw new APIError(response.status, data);
  return data;
}

export const api = {
  get: (path) => send("GET", path),
  post: (path, body) => send("POST", path, body),
  delete: (path) => send("DELETE", path, {}),
};

/** The signed-in session (who, and its CSRF token), or null. */
export async function currentSession() {
  const session = await send("GET", "/console/session");
  if (!session.signed_in) return null;
  csrf = session.csrf_token;
  signedInKey = session.key_id;
  return session;
}

/** Exchanges an admin key for a session. */
export async function signIn(key) {
  signedInKey = "";
  const session = await send("POST", "/console/session", { key });
  csrf = session.csrf_token;
  signedInKey = session.key_id;
  return session;
}

/** Ends the session server-side. */
export async function signOut() {
  await send("POST", "/console/sign-out", {});
  csrf = "";
  signedInKey = "";
}
