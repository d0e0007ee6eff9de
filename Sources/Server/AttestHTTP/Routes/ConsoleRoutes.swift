import AttestCrypto
import AttestHTTPServer
import AttestService

/// The console (on the admin listener only): its static files at `/console/`, compiled into the
/// binary, and the exchange of an admin key for a session (`/console/session`) and its end
/// (`/console/sign-out`). The console's pages then call `/admin/v1/` with the session cookie and
/// the session's CSRF token.
struct ConsoleRoutes: Sendable {
    let admin: WorkspaceAdmin

    func register(in group: RouteGroup) {
        group.on("GET", "/console", name: "console_redirect", quiet: true) { _ throws(Problem) in
            HTTPResponse(status: 301, headers: [HTTPHeader(name: "Location", value: "/console/")])
        }
        group.on("POST", "/console/session", name: "console_sign_in", signIn)
        group.on("GET", "/console/session", name: "console_session", session)
        group.on("POST", "/console/sign-out", name: "console_sign_out", signOut)
        group.on("GET", "/console/sessions", name: "console_sessions", sessions)
        group.on("POST", "/console/sessions/end-others", name: "console_sessions_end", endOthers)
        // Last: the first matching pattern answers, and this one matches every path below /console/.
        group.on("GET", "/console/{file...}", name: "console_file", quiet: true, file)
    }

    /// A static file; the folder's index for `/console/`.
    private func file(_ context: inout RequestContext) throws -> HTTPResponse {
        let name = context.parameter("file").isEmpty ? "index.html" : context.parameter("file")
        guard let asset = ConsoleAssets.byName[name] else { throw Problem(.notFound, .notFound, "no such console file") }
        // Revalidated on every load (no-cache): a new attestd's console is used at once.
        return HTTPResponse(
            status: 200,
            headers: [HTTPHeader(name: "Content-Type", value: asset.type), HTTPHeader(name: "Cache-Control", value: "no-cache")],
            body: asset.bytes)
    }

    /// Sign-in: `{"key": "adm_..."}` for a session cookie and the session's CSRF token.
    private func signIn(_ context: inout RequestContext) throws -> HTTPResponse {
        let body = try AdminBody(context.request)
        guard case .string(let key)? = body.members["key"] else { throw Problem.malformed(.missing(.key), "key is required") }
        let session: AdminSession
        do {
            session = try admin.signIn(key: key, address: context.client)
        } catch  where error.code == .adminUnauthenticated {
            throw Problem(
                .service(.adminUnauthenticated), .service(.adminCredential),
                "this admin key is not valid (unknown, revoked, disabled or expired)")
        } catch {
            throw Problem(error)
        }
        context.log.actor = session.principal.actor
        return JSONBody.response(
            members(session.principal, secret: session.secret, expiresAt: session.expiresAt),
            headers: [ConsoleCookie.set(session.secret, seconds: WorkspaceAdmin.sessionSeconds, secure: context.viaTLS)])
    }

    /// The signed-in session, for a console page that loads: who, and the CSRF token; or
    /// `{"signed_in": false}` (a page that loads signed out is not an error).
    private func session(_ context: inout RequestContext) throws -> HTTPResponse {
        let signedOut = JSONBody.response([("signed_in", false)])
        guard let secret = ConsoleCookie.session(context.request) else { return signedOut }
        let principal: AdminPrincipal
        do {
            principal = try admin.session(secret)
        } catch  where error.code == .adminUnauthenticated {
            return signedOut
        } catch {
            throw Problem(error)
        }
        context.log.actor = principal.actor
        return JSONBody.response(members(principal, secret: secret, expiresAt: nil))
    }

    /// Sign-out: the session ends server-side (the cookie's value is dead even if kept) and the
    /// cookie is cleared. Needs the CSRF token, as every change does.
    private func signOut(_ context: inout RequestContext) throws -> HTTPResponse {
        let clear = ConsoleCookie.clear(secure: context.viaTLS)
        guard let secret = ConsoleCookie.session(context.request) else {
            return JSONBody.response([("signed_out", true)], headers: [clear])
        }
        guard let presented = context.request.header("X-CSRF-Token"), WorkspaceAdmin.acceptsCSRF(presented, session: secret) else {
            throw Problem(.forbidden, .csrf, "signing out needs the session's X-CSRF-Token")
        }
        try admin.signOut(secret)
        return JSONBody.response([("signed_out", true)], headers: [clear])
    }

    /// The signed-in key's live sessions, newest first: when each began and ends, and which is
    /// this one (`id`: a prefix of the session's hash, never the cookie's value).
    private func sessions(_ context: inout RequestContext) throws -> HTTPResponse {
        let (principal, secret) = try signedIn(context)
        let list = try admin.sessions(principal, current: secret)
        return JSONBody.response([
            (
                "sessions",
                JSONValue.array(
                    list.map { record, current in
                        JSONValue.object([
                            ("id", String(Hex.encode(record.sessionHash).prefix(16))), ("created_at", record.createdAt),
                            ("expires_at", record.expiresAt), ("current", current),
                        ])
                    })
            ),
            ("idle_timeout_seconds", admin.sessions.idleSeconds), ("maximum_sessions", admin.sessions.maximumPerKey),
        ])
    }

    /// Ends the key's other sessions (needs the CSRF token, as every change does).
    private func endOthers(_ context: inout RequestContext) throws -> HTTPResponse {
        let (principal, secret) = try signedIn(context)
        guard let presented = context.request.header("X-CSRF-Token"), WorkspaceAdmin.acceptsCSRF(presented, session: secret) else {
            throw Problem(.forbidden, .csrf, "ending sessions needs the session's X-CSRF-Token")
        }
        context.log.actor = principal.actor
        return JSONBody.response([("ended", try admin.endOtherSessions(principal, current: secret))])
    }

    /// The principal and cookie value of a live session; 401 without one.
    private func signedIn(_ context: RequestContext) throws(Problem) -> (AdminPrincipal, String) {
        guard let secret = ConsoleCookie.session(context.request) else {
            throw Problem(.service(.adminUnauthenticated), .service(.adminCredential), "sign in first")
        }
        do {
            return (try admin.session(secret), secret)
        } catch  where error.code == .adminUnauthenticated {
            throw Problem(.service(.adminUnauthenticated), .service(.adminCredential), "this session has ended; sign in again")
        } catch {
            throw Problem(error)
        }
    }

    private func members(_ principal: AdminPrincipal, secret: String, expiresAt: Int64?) -> [(String, any Sendable)] {
        [
            ("signed_in", true), ("name", principal.name), ("workspace_id", principal.workspaceID), ("role", principal.role.rawValue),
            ("key_id", principal.keyID), ("csrf_token", WorkspaceAdmin.csrfToken(session: secret)),
        ] + admin.capabilities(principal).map { ($0.0, $0.1 as any Sendable) } + [("expires_at", expiresAt)]
    }
}

/// The headers every answer of the admin listener carries: no script, style, frame or fetch from
/// another origin, no inline script (`default-src 'self'`), no framing, no MIME sniffing, no
/// referrer, and nothing stored by caches unless a route says otherwise.
struct AdminHeaders: RouterMiddleware {
    static let contentSecurityPolicy = "default-src 'self'; frame-ancestors 'none'"

    func complete(_ response: inout HTTPResponse, _ context: RequestContext) {
        response.headers += [
            HTTPHeader(name: "Content-Security-Policy", value: Self.contentSecurityPolicy),
            HTTPHeader(name: "X-Content-Type-Options", value: "nosniff"), HTTPHeader(name: "Referrer-Policy", value: "no-referrer"),
            HTTPHeader(name: "X-Frame-Options", value: "DENY"),
        ]
        if !response.headers.contains(where: { $0.name.lowercased() == "cache-control" }) {
            response.headers.append(HTTPHeader(name: "Cache-Control", value: "no-store"))
        }
    }
}
