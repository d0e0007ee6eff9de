// The admin API as the console calls it: same origin, the session cookie (HttpOnly: this script
// never sees it) and the session's CSRF token on every change.

let csrf = "";

/** A refusal of the API: its HTTP status and problem document. */
export class APIError extends Error {
  constructor(status, problem) {
    super(problem.detail || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || "";
    this.reason = problem.reason || "";
  }
}

async function send(method, path, body) {
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
  return session;
}

/** Exchanges an admin key for a session. */
export async function signIn(key) {
  const session = await send("POST", "/console/session", { key });
  csrf = session.csrf_token;
  return session;
}

/** Ends the session server-side. */
export async function signOut() {
  await send("POST", "/console/sign-out", {});
  csrf = "";
}
