import AttestCrypto
import AttestHTTPServer
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

private typealias W = AdminWorld

/// Debug tokens end to end: made through the admin API, exchanged at `POST /v1/debug-token` over
/// loopback, told apart by the gateway, and killed by their revocation.
@Suite("Debug tokens")
struct DebugTokenTests {
    /// Creates a debug token through the admin API; returns its ID and secret.
    static func create(_ world: AdminWorld, key: String, clientID: String, json: String = #"{"name": "CI"}"#) throws -> (String, String) {
        let created = world.call("POST", "/admin/v1/integrations/\(clientID)/debug-tokens", key: key, json: json)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let body = W.body(created)
        return (try #require(body["id"] as? String), try #require(body["secret"] as? String))
    }

    static func exchange(_ world: AdminWorld, clientID: String, secret: String) throws -> RawHTTPResponse {
        try world.world.client().postJSON("/v1/debug-token", #"{"client_id": "\#(clientID)", "debug_token": "\#(secret)"}"#)
    }

    @Test("a developer's debug token is exchanged for a marked access token; revoking it kills that token at once")
    func exchangeAndRevoke() async throws {
        try await offThePool {
            let world = try W()
            let clientID = world.world.integration.clientID
            let (id, secret) = try Self.create(world, key: try world.key(.developer), clientID: clientID)
            #expect(secret.hasPrefix("dbg_") && secret.utf8.count == 47)
            let exchanged = try Self.exchange(world, clientID: clientID, secret: secret)
            #expect(exchanged.status == 200)
            let body = world.world.json(exchanged)
            #expect(Set(body.keys) == ["access_token", "token_type", "expires_in", "scope", "workspace_id", "debug"])
            #expect(body["debug"] as? Bool == true && body["expires_in"] as? Int == 3600 && body["workspace_id"] as? String == "ws_http")
            let token = try #require(body["access_token"] as? String)
            let client = try world.world.client()
            let authorized = try world.world.authorize(client, token: token)
            #expect(authorized.status == 200 && authorized.header("Attest-Debug") == "true")
            #expect(world.world.json(try world.world.introspect(client, token: token))["debug"] as? Bool == true)
            // A device's token carries no mark.
            let device = try world.device()
            #expect(try world.world.authorize(client, token: device.token).header("Attest-Debug") == nil)
            #expect(world.world.json(try world.world.introspect(client, token: device.token))["debug"] == nil)

            let listed = W.body(world.call("GET", "/admin/v1/integrations/\(clientID)/debug-tokens", key: try world.key(.user)))
            let row = try #require((listed["debug_tokens"] as? [[String: Any]])?.first)
            #expect(row["id"] as? String == id && row["minted"] as? Int == 1 && row["revoked"] as? Bool == false)
            #expect(row["last_used_at"] as? Int != nil && row["secret"] == nil)

            let revoked = world.call("DELETE", "/admin/v1/integrations/\(clientID)/debug-tokens/\(id)", key: try world.key(.developer))
            #expect(revoked.status == 200)
            #expect(try world.world.authorize(client, token: token).status == 401)
            #expect(try world.authorizes(device.token))
            let again = try Self.exchange(world, clientID: clientID, secret: secret)
            #expect(again.status == 401 && world.world.json(again)["code"] as? String == "invalid_debug_token")
            let actions = try world.world.app.store.auditPage(AuditQuery(workspaceID: nil)).entries.reversed().map(\.entry.action)
            #expect(actions.contains(.debugTokenCreate) && actions.contains(.debugTokenRevoke))
            let metrics = String(
                decoding: world.world.app.router.respond(to: HTTPRequest(method: "GET", path: "/metrics")).body, as: UTF8.self)
            #expect(metrics.contains(#"attestd_tokens_minted_total{kind="debug"} 1"#))
            #expect(metrics.contains(#"attestd_debug_token_exchanges_total{outcome="ok"} 1"#))
            #expect(metrics.contains(#"attestd_debug_token_exchanges_total{outcome="debug_token"} 1"#))
        }
    }

    @Test("unknown, malformed, revoked and another integration's debug tokens all answer one 401 (expired: the store contract)")
    func oneRefusal() async throws {
        try await offThePool {
            let world = try W()
            let home = world.world.integration.clientID
            let other = try world.integration(name: "Other").clientID
            let developer = try world.key(.developer)
            let (_, foreign) = try Self.create(world, key: developer, clientID: other)
            let (revokedID, revoked) = try Self.create(world, key: developer, clientID: home)
            #expect(world.call("DELETE", "/admin/v1/integrations/\(home)/debug-tokens/\(revokedID)", key: developer).status == 200)
            for secret in ["dbg_" + String(repeating: "A", count: 43), "dbg_short", "not-a-debug-token", foreign, revoked] {
                let refused = try Self.exchange(world, clientID: home, secret: secret)
                #expect(refused.status == 401, "\(secret.prefix(6))")
                #expect(world.world.json(refused)["code"] as? String == "invalid_debug_token")
                #expect(world.world.json(refused)["reason"] as? String == "debug_token")
            }
        }
    }

    @Test("roles: user may list, developer may create and revoke; another workspace answers 404; limits hold")
    func rolesAndLimits() async throws {
        try await offThePool {
            let world = try W(listening: false)
            let home = world.world.integration.clientID
            let path = "/admin/v1/integrations/\(home)/debug-tokens"
            let user = try world.key(.user)
            #expect(world.call("GET", path, key: user).status == 200)
            #expect(world.call("POST", path, key: user, json: #"{"name": "x"}"#).status == 403)
            let outsider = try world.key(.primaryOwner, workspace: W.otherWorkspace, name: "Outsider")
            #expect(world.call("GET", path, key: outsider).status == 404)
            #expect(world.call("POST", path, key: outsider, json: #"{"name": "x"}"#).status == 404)
            let developer = try world.key(.developer)
            #expect(world.call("POST", path, key: developer, json: #"{"name": "x", "expires_in": 7776001}"#).status == 400)
            let short = world.call("POST", path, key: developer, json: #"{"name": "x", "expires_in": 59}"#)
            #expect(short.status == 400 && W.body(short)["reason"] as? String == "expires_in")
            let unknown = world.call("DELETE", "\(path)/dbgt_0000000000000000", key: developer)
            #expect(unknown.status == 404 && W.code(unknown) == "debug_token_not_found")
            let (id, _) = try Self.create(world, key: developer, clientID: home, json: #"{"name": "ninety days", "expires_in": 7776000}"#)
            #expect(world.call("DELETE", "\(path)/\(id)", key: outsider).status == 404)
            for index in 1..<WorkspaceAdmin.debugTokenLiveLimit {
                _ = try Self.create(world, key: developer, clientID: home, json: #"{"name": "t\#(index)"}"#)
            }
            let over = world.call("POST", path, key: developer, json: #"{"name": "one too many"}"#)
            #expect(over.status == 409 && W.code(over) == "debug_token_limit")
            #expect(world.call("DELETE", "\(path)/\(id)", key: developer).status == 200)
            _ = try Self.create(world, key: developer, clientID: home, json: #"{"name": "room again"}"#)
        }
    }

    @Test("a suspended integration refuses the exchange with 403; past 60 mints an hour a debug token gets 429 with Retry-After")
    func suspendedAndLimited() async throws {
        try await offThePool {
            let world = try W()
            let home = world.world.integration.clientID
            let developer = try world.key(.developer)
            let (_, secret) = try Self.create(world, key: developer, clientID: home)
            let (_, second) = try Self.create(world, key: developer, clientID: home)
            var minted: [String] = []
            for _ in 0..<60 {
                let exchanged = try Self.exchange(world, clientID: home, secret: secret)
                #expect(exchanged.status == 200)
                minted.append(world.world.json(exchanged)["access_token"] as? String ?? "")
            }
            let limited = try Self.exchange(world, clientID: home, secret: secret)
            #expect(limited.status == 429 && limited.header("Retry-After") != nil)
            _ = try world.world.admin.setSuspended(clientID: home, true)
            let suspended = try Self.exchange(world, clientID: home, secret: second)
            #expect(suspended.status == 403 && world.world.json(suspended)["code"] as? String == "integration_suspended")
            // What it minted before is refused while the integration is suspended, and back after.
            #expect(try !world.authorizes(minted[0]) && !world.authorizes(minted[59]))
            _ = try world.world.admin.setSuspended(clientID: home, false)
            #expect(try world.authorizes(minted[59]))
        }
    }
}
