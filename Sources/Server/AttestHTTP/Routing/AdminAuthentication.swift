import AttestHTTPServer
import AttestService

/// Resolves who calls the admin API into `context.principal` (and the log line's actor): an
/// admin key as `Authorization: Bearer adm_...`, or the console's session cookie. A
/// cookie-authenticated request that changes anything must carry the session's CSRF token in
/// `X-CSRF-Token`. Nothing is cached: the key, or the session and its key, are read from the
/// store on every request, so a revocation or a sign-out takes effect at the next one.
struct AdminAuthentication: RouterMiddleware {
    let admin: WorkspaceAdmin

    func prepare(_ context: inout RequestContext) throws(Problem) {
        let request = context.request
        switch BearerCredential(request) {
        case .credential(let key):
            context.principal = try Self.calling { () throws(ServiceError) in try admin.authenticate(key: key) }
        case .malformed:
            throw Self.unauthorized
        case .none:
            guard let session = ConsoleCookie.session(request) else { throw Self.unauthorized }
            let principal = try Self.calling { () throws(ServiceError) in try admin.session(session) }
            // Why a token besides the cookie: the browser sends the cookie with any request to this
            // origin; only a page that could read the session (the console) can send the token.
            // SameSite=Strict already keeps other sites' requests cookie-less; this holds also
            // where SameSite does not (an old browser, a sibling page of the same site).
            if !["GET", "HEAD"].contains(request.method) {
                guard let presented = request.header("X-CSRF-Token"), WorkspaceAdmin.acceptsCSRF(presented, session: session) else {
                    throw Problem(.forbidden, .csrf, "a change made from the console needs the session's X-CSRF-Token")
                }
            }
            context.principal = principal
            context.session = session
        }
        context.log.actor = context.principal?.actor
    }

    /// Names the key an answer was made for (`Attestd-Key-Id`): the console shows no answer made
    /// for another key than the one it signed in with (a sign-in in another tab replaces the
    /// browser's one cookie).
    func complete(_ response: inout HTTPResponse, _ context: RequestContext) {
        if let principal = context.principal { response.headers.append(HTTPHeader(name: "Attestd-Key-Id", value: principal.keyID)) }
    }

    /// The answer to a missing, malformed, unknown or revoked key and to a dead session alike.
    static var unauthorized: Problem {
        var problem = Problem(ServiceError.adminUnauthenticated)
        problem.headers.append(HTTPHeader(name: "WWW-Authenticate", value: "Bearer realm=\"attestd-admin\""))
        return problem
    }

    private static func calling<T>(_ body: () throws(ServiceError) -> T) throws(Problem) -> T {
        do {
            return try body()
        } catch  where error.code == .adminUnauthenticated {
            throw unauthorized
        } catch {
            throw Problem(error)
        }
    }
}

/// The console's session cookie: `attestd_session`, `HttpOnly` (no script reads it),
/// `SameSite=Strict` (no other site's request carries it), `Path=/`, `Secure` when the console
/// was reached over TLS, and `Max-Age` its remaining life.
enum ConsoleCookie {
    static let name = "attestd_session"
    /// Its name when `Secure` (review L8): a browser accepts a `__Host-` cookie only from a
    /// secure origin, for the whole host (`Path=/`, no `Domain`), so no sibling subdomain or
    /// plain-http page can set or shadow it.
    static let secureName = "__Host-attestd_session"

    /// The session cookie's value: the `__Host-` one when the request carries exactly one, else
    /// the plain one when exactly one.
    static func session(_ request: HTTPRequest) -> String? {
        var found: [Bool: [String]] = [:]
        for header in request.headerValues("Cookie") {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let key = parts[0].trimmingCharactersInSpaces
                guard key == name || key == secureName else { continue }
                found[key == secureName, default: []].append(String(parts[1].trimmingCharactersInSpaces))
            }
        }
        if let secure = found[true], secure.count == 1 { return secure[0] }
        if found[true] == nil, let plain = found[false], plain.count == 1 { return plain[0] }
        return nil
    }

    /// The `Set-Cookie` value that sets the session for `seconds`.
    static func set(_ value: String, seconds: Int64, secure: Bool) -> HTTPHeader {
        HTTPHeader(
            name: "Set-Cookie",
            value: "\(secure ? secureName : name)=\(value); Path=/; Max-Age=\(seconds); HttpOnly; SameSite=Strict"
                + (secure ? "; Secure" : ""))
    }

    /// The `Set-Cookie` value that removes it.
    static func clear(secure: Bool) -> HTTPHeader {
        HTTPHeader(
            name: "Set-Cookie",
            value: "\(secure ? secureName : name)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : ""))
    }
}

extension Substring {
    var trimmingCharactersInSpaces: Substring {
        var text = self
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}
