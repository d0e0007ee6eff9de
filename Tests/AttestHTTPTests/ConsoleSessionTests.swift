import AttestCore
import AttestCrypto
import AttestHTTPServer
import AttestServer
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

/// The console's sessions: sign-in exchanges a key for a cookie, changes need the CSRF token,
/// sessions expire, end at sign-out and with their key; every answer carries the page headers.
@Suite("Console sessions")
struct ConsoleSessionTests {
    typealias W = AdminWorld

    /// Signs in with `key`: the cookie's value, the CSRF token and the raw Set-Cookie header.
    static func signIn(_ world: AdminWorld, _ key: String, headers: [HTTPHeader] = [], remoteAddress: String = "127.0.0.1") throws -> (
        cookie: String, csrf: String, setCookie: String
    ) {
        let response = world.call("POST", "/console/session", json: #"{"key":"\#(key)"}"#, headers: headers, remoteAddress: remoteAddress)
        #expect(response.status == 200)
        let setCookie = try #require(W.header(response, "Set-Cookie"))
        let value = try #require(setCookie.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last.map(String.init))
        return (value, try #require(W.body(response)["csrf_token"] as? String), setCookie)
    }

    static func cookie(_ value: String) -> HTTPHeader { HTTPHeader(name: "Cookie", value: "theme=dark; attestd_session=\(value)") }

    @Test(
        "sign-in sets an HttpOnly, SameSite=Strict, expiring cookie (Secure and __Host- behind a trusted TLS proxy only) and stores only its hash"
    )
    func signInCookie() async throws {
        try await offThePool {
            // The device listener's trusted proxy is not the admin listener's (review L9).
            let world = try AdminWorld() {
                $0.adminTrustedProxies = ["10.0.0.0/8"]
                $0.trustedProxies = ["192.0.2.0/24"]
            }
            let key = try world.key(.owner)
            let plain = try Self.signIn(world, key)
            #expect(
                plain.setCookie.contains("HttpOnly") && plain.setCookie.contains("SameSite=Strict") && plain.setCookie.contains("Path=/"))
            #expect(plain.setCookie.contains("Max-Age=28800") && !plain.setCookie.contains("Secure"))
            #expect(plain.setCookie.hasPrefix("attestd_session="))
            let proto = HTTPHeader(name: "X-Forwarded-Proto", value: "https")
            let secure = try Self.signIn(world, key, headers: [proto], remoteAddress: "10.1.2.3")
            #expect(secure.setCookie.contains("; Secure") && secure.setCookie.hasPrefix("__Host-attestd_session="))
            // The __Host- cookie is the one read, even beside a stale plain one.
            let both = HTTPHeader(name: "Cookie", value: "attestd_session=\(plain.cookie); __Host-attestd_session=\(secure.cookie)")
            #expect(W.body(world.call("GET", "/console/session", headers: [both]))["csrf_token"] as? String == secure.csrf)
            // An untrusted peer's X-Forwarded-Proto is not believed.
            #expect(!(try Self.signIn(world, key, headers: [proto], remoteAddress: "192.0.2.1").setCookie.contains("Secure")))
            #expect(world.call("POST", "/console/session", json: #"{"key":"adm_wrong"}"#).status == 401)
            let session = world.call("GET", "/console/session", headers: [Self.cookie(plain.cookie)])
            #expect(W.body(session)["csrf_token"] as? String == plain.csrf && W.body(session)["role"] as? String == "owner")
        }
    }

    @Test("X-Request-Id and X-Forwarded-For are believed only from a proxy trusted for that listener (review L9)")
    func forwardedHeadersFromTrustedProxiesOnly() async throws {
        try await offThePool {
            let world = try AdminWorld() { $0.adminTrustedProxies = ["10.0.0.0/8"] }
            let headers = [HTTPHeader(name: "X-Request-Id", value: "forged-id"), HTTPHeader(name: "X-Forwarded-For", value: "203.0.113.7")]
            let untrusted = world.call("GET", "/console/session", headers: headers, remoteAddress: "192.0.2.1")
            #expect(W.header(untrusted, "X-Request-Id") != "forged-id")
            let trusted = world.call("GET", "/console/session", headers: headers, remoteAddress: "10.1.2.3")
            #expect(W.header(trusted, "X-Request-Id") == "forged-id")
            // Sign-in limits count the forwarded client only behind the trusted proxy.
            for _ in 0..<30 {
                _ = world.call("POST", "/console/session", json: #"{"key":"adm_x"}"#, headers: headers, remoteAddress: "192.0.2.1")
            }
            #expect(world.call("POST", "/console/session", json: #"{"key":"adm_x"}"#, remoteAddress: "192.0.2.1").status == 429)
            #expect(
                world.call("POST", "/console/session", json: #"{"key":"adm_x"}"#, headers: headers, remoteAddress: "10.1.2.3").status == 401
            )
        }
    }

    @Test("an admin listener off loopback with no trusted TLS proxy in front is warned about at start (review L8)")
    func exposedAdminListener() {
        #expect(Server.adminExposure("0.0.0.0", []) != nil)
        #expect(Server.adminExposure("10.0.0.5", []) != nil)
        #expect(Server.adminExposure("127.0.0.1", []) == nil)
        #expect(Server.adminExposure("0.0.0.0", ["10.0.0.0/8"]) == nil)
    }

    @Test("a cookie-authenticated change needs the session's CSRF token; reads do not")
    func csrf() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let session = try Self.signIn(world, try world.key(.owner))
            let target = try world.integration()
            #expect(world.call("GET", "/admin/v1/integrations", headers: [Self.cookie(session.cookie)]).status == 200)
            let path = "/admin/v1/integrations/\(target.clientID)/suspend"
            let missing = world.call("POST", path, json: "{}", headers: [Self.cookie(session.cookie)])
            #expect(missing.status == 403 && W.code(missing) == "forbidden" && W.body(missing)["reason"] as? String == "csrf")
            let other = try Self.signIn(world, try world.key(.owner))
            let wrong = world.call(
                "POST", path, json: "{}", headers: [Self.cookie(session.cookie), HTTPHeader(name: "X-CSRF-Token", value: other.csrf)])
            #expect(wrong.status == 403)
            #expect(try world.world.admin.show(clientID: target.clientID)?.suspendedAt == nil)
            let right = world.call(
                "POST", path, json: "{}", headers: [Self.cookie(session.cookie), HTTPHeader(name: "X-CSRF-Token", value: session.csrf)])
            #expect(right.status == 200)
            #expect(try world.world.admin.show(clientID: target.clientID)?.suspendedAt != nil)
        }
    }

    @Test("sign-out ends the session server-side: the same cookie is refused afterwards")
    func signOut() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let session = try Self.signIn(world, try world.key(.admin))
            #expect(world.call("POST", "/console/sign-out", json: "{}", headers: [Self.cookie(session.cookie)]).status == 403)
            let out = world.call(
                "POST", "/console/sign-out", json: "{}",
                headers: [Self.cookie(session.cookie), HTTPHeader(name: "X-CSRF-Token", value: session.csrf)])
            #expect(out.status == 200 && W.header(out, "Set-Cookie")?.contains("Max-Age=0") == true)
            #expect(world.call("GET", "/admin/v1/integrations", headers: [Self.cookie(session.cookie)]).status == 401)
            let after = world.call("GET", "/console/session", headers: [Self.cookie(session.cookie)])
            #expect(after.status == 200 && W.body(after)["signed_in"] as? Bool == false && W.body(after)["csrf_token"] == nil)
        }
    }

    @Test("a session used every 25 minutes still expires 8 hours after sign-in, and dies with its key")
    func expiry() async throws {
        try await offThePool {
            let world = try AdminWorld() { $0.insecureTestMode = true }
            let clock = Int64(Date().timeIntervalSince1970)
            let setClock = { (now: Int64) in
                world.world.app.router.respond(
                    to: HTTPRequest(
                        method: "POST", path: "/test/clock", headers: [HTTPHeader(name: "Content-Type", value: "application/json")],
                        body: Array(#"{"now":"\#(now)"}"#.utf8)))
            }
            #expect(setClock(clock).status == 200)
            let session = try Self.signIn(world, try world.key(.owner))
            for step in stride(from: Int64(1500), to: 8 * 3600, by: 1500) + [8 * 3600 - 1] {
                #expect(setClock(clock + step).status == 200)
                #expect(world.call("GET", "/admin/v1/integrations", headers: [Self.cookie(session.cookie)]).status == 200)
            }
            #expect(setClock(clock + 8 * 3600).status == 200)
            #expect(world.call("GET", "/admin/v1/integrations", headers: [Self.cookie(session.cookie)]).status == 401)
            #expect(setClock(clock).status == 200)
            let issued = try world.admin.issueKey(workspaceID: W.workspace, role: .owner, name: "Leaver", actor: "setup")
            let doomed = try Self.signIn(world, issued.secret)
            #expect(world.call("GET", "/admin/v1/integrations", headers: [Self.cookie(doomed.cookie)]).status == 200)
            _ = try world.admin.revokeKey(id: issued.record.id, actor: "alice")
            #expect(world.call("GET", "/admin/v1/integrations", headers: [Self.cookie(doomed.cookie)]).status == 401)
        }
    }

    /// Sets the world's clock (test mode) to `now`.
    static func setClock(_ world: AdminWorld, _ now: Int64) {
        let response = world.world.app.router.respond(
            to: HTTPRequest(
                method: "POST", path: "/test/clock", headers: [HTTPHeader(name: "Content-Type", value: "application/json")],
                body: Array(#"{"now":"\#(now)"}"#.utf8)))
        #expect(response.status == 200)
    }

    @Test("a session unused for 30 minutes ends; each use renews the 30 minutes (review L4)")
    func idleTimeout() async throws {
        try await offThePool {
            let world = try AdminWorld() { $0.insecureTestMode = true }
            let start = Int64(Date().timeIntervalSince1970)
            Self.setClock(world, start)
            let session = try Self.signIn(world, try world.key(.owner))
            let use = { world.call("GET", "/admin/v1/integrations", headers: [Self.cookie(session.cookie)]).status }
            Self.setClock(world, start + 1799)
            #expect(use() == 200)
            Self.setClock(world, start + 1799 + 1799)
            #expect(use() == 200)
            Self.setClock(world, start + 1799 + 1799 + 1800)
            #expect(use() == 401)
        }
    }

    @Test("sign-ins are limited per key and per address (429, Retry-After), and a key holds at most 10 sessions (review L3, L4)")
    func signInLimits() async throws {
        try await offThePool {
            let world = try AdminWorld() { $0.insecureTestMode = true }
            let start = Int64(Date().timeIntervalSince1970)
            Self.setClock(world, start)
            let key = try world.key(.owner)
            var sessions: [(cookie: String, csrf: String, setCookie: String)] = []
            for _ in 0..<10 { sessions.append(try Self.signIn(world, key)) }
            let refused = world.call("POST", "/console/session", json: #"{"key":"\#(key)"}"#)
            #expect(refused.status == 429 && W.header(refused, "Retry-After").flatMap(Int.init).map { $0 >= 1 } == true)
            // A minute later the key may sign in again; one of its oldest sessions ends (the ten
            // began in the same second), ten stay.
            Self.setClock(world, start + 60)
            sessions.append(try Self.signIn(world, key))
            let alive = sessions.map { world.call("GET", "/admin/v1/integrations", headers: [Self.cookie($0.cookie)]).status == 200 }
            #expect(alive.filter { $0 }.count == 10 && alive.last == true)
            let listed = W.body(world.call("GET", "/console/sessions", headers: [Self.cookie(sessions[10].cookie)]))
            let rows = listed["sessions"] as? [[String: Any]] ?? []
            #expect(rows.count == 10 && rows.filter { $0["current"] as? Bool == true }.count == 1)
            // Guessing from one address: 30 tries, then 429 before any key is looked up.
            var statuses: [Int] = []
            for _ in 0..<31 {
                statuses.append(world.call("POST", "/console/session", json: #"{"key":"adm_wrong"}"#, remoteAddress: "203.0.113.9").status)
            }
            #expect(statuses.prefix(30).allSatisfy { $0 == 401 } && statuses.last == 429)
            // Another address is not held back by it.
            #expect(world.call("POST", "/console/session", json: #"{"key":"adm_wrong"}"#, remoteAddress: "203.0.113.10").status == 401)
        }
    }

    @Test("the key's holder lists its sessions and ends the others; the CSRF token is needed (review L4)")
    func endOtherSessions() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let key = try world.key(.admin)
            let sessions = try (0..<3).map { _ in try Self.signIn(world, key) }
            let current = sessions[2]
            let withoutCSRF = world.call("POST", "/console/sessions/end-others", json: "{}", headers: [Self.cookie(current.cookie)])
            #expect(withoutCSRF.status == 403)
            let ended = world.call(
                "POST", "/console/sessions/end-others", json: "{}",
                headers: [Self.cookie(current.cookie), HTTPHeader(name: "X-CSRF-Token", value: current.csrf)])
            #expect(ended.status == 200 && W.body(ended)["ended"] as? Int == 2)
            #expect(world.call("GET", "/admin/v1/integrations", headers: [Self.cookie(sessions[0].cookie)]).status == 401)
            #expect(world.call("GET", "/admin/v1/integrations", headers: [Self.cookie(current.cookie)]).status == 200)
            let rows =
                W.body(world.call("GET", "/console/sessions", headers: [Self.cookie(current.cookie)]))["sessions"] as? [[String: Any]]
            #expect(rows?.count == 1)
            #expect(world.call("GET", "/console/sessions").status == 401)
        }
    }

    @Test("every answer of the admin listener carries the CSP, nosniff and no-referrer; the console files their media types")
    func headers() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let responses = [
                world.call("GET", "/console/"), world.call("GET", "/admin/v1/integrations"), world.call("GET", "/console/missing.js"),
                world.call("GET", "/nowhere"),
            ]
            for response in responses {
                #expect(W.header(response, "Content-Security-Policy") == "default-src 'self'; frame-ancestors 'none'")
                #expect(W.header(response, "X-Content-Type-Options") == "nosniff")
                #expect(W.header(response, "Referrer-Policy") == "no-referrer")
            }
            #expect(responses[0].status == 200 && W.header(responses[0], "Content-Type") == "text/html; charset=utf-8")
            #expect(responses[2].status == 404)
            let redirect = world.call("GET", "/console")
            #expect(redirect.status == 301 && W.header(redirect, "Location") == "/console/")
            #expect(W.header(world.call("GET", "/admin/v1/integrations", key: try world.key(.user)), "Cache-Control") == "no-store")
        }
    }
}
