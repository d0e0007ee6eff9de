import AttestCore
import AttestCrypto
import AttestHTTPServer
import AttestServer
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

/// The admin API: every endpoint for every role, one workspace's key against another's
/// integrations, devices and tokens, revoked keys, and the checks of each body.
@Suite("Admin API")
struct AdminAPITests {
    typealias W = AdminWorld

    @Test("reading needs any role; every change needs admin, owner or primary_owner, and a refused role changes nothing")
    func roleMatrix() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let home = world.world.integration.clientID
            for role in AdminRole.allCases {
                let key = try world.key(role)
                let mayChange = role >= .admin
                for path in [
                    "/admin/v1/integrations", "/admin/v1/integrations/\(home)", "/admin/v1/integrations/\(home)/devices", "/admin/v1/audit",
                ] {
                    #expect(world.call("GET", path, key: key).status == 200, "\(role) GET \(path)")
                }
                let target = try world.integration()
                let device = try world.device()
                let changes: [(String, String, String?)] = [
                    ("POST", "/admin/v1/integrations", #"{"name":"New","team_id":"ABCDE12345","bundle_ids":["com.example.new"]}"#),
                    ("POST", "/admin/v1/integrations/\(target.clientID)/suspend", nil),
                    ("POST", "/admin/v1/integrations/\(target.clientID)/resume", nil),
                    ("POST", "/admin/v1/integrations/\(target.clientID)/policy", #"{"max_risk_metric":5}"#),
                    ("POST", "/admin/v1/tokens/revoke", #"{"token":"\#(device.token)"}"#),
                    ("POST", "/admin/v1/devices/\(device.keyID)/block", nil),
                    ("POST", "/admin/v1/integrations/\(target.clientID)/revoke", #"{"confirm":"\#(target.clientID)"}"#),
                ]
                for (method, path, json) in changes {
                    let response = world.call(method, path, key: key, json: json ?? (method == "POST" ? "{}" : nil))
                    if mayChange {
                        #expect((200...201).contains(response.status), "\(role) \(method) \(path): \(response.status)")
                    } else {
                        #expect(response.status == 403 && W.code(response) == "forbidden_role", "\(role) \(method) \(path)")
                    }
                }
                let patched = world.call(
                    "PATCH", "/admin/v1/integrations/\(target.clientID)", key: key, json: #"{"max_new_keys_per_hour":7}"#)
                #expect(patched.status == (mayChange ? 200 : 403), "\(role) PATCH")
                let after = try #require(try world.world.admin.show(clientID: target.clientID))
                #expect(after.status == (mayChange ? .revoked : .active), "\(role)")
                #expect(after.policy.maxRiskMetric == (mayChange ? 5 : nil), "\(role)")
                #expect(after.policy.maxNewKeysPerHour == (mayChange ? 7 : nil), "\(role)")
                #expect(try world.authorizes(device.token) == !mayChange, "\(role)")
                let keys = world.call("GET", "/admin/v1/keys", key: key)
                #expect(keys.status == (role >= .owner ? 200 : 403), "\(role) GET keys")
            }
        }
    }

    @Test("another workspace's integration, device and token answer 404 exactly as unknown ones, and are left alone")
    func isolation() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let theirs = world.world.integration.clientID
            let device = try world.device()
            let outsider = try world.key(.primaryOwner, workspace: W.otherWorkspace, name: "Outsider")
            let unknownClient = "clid_" + String(repeating: "0", count: 32)
            let pairs: [(String, String, String, String?)] = [
                ("GET", "/admin/v1/integrations/\(theirs)", "/admin/v1/integrations/\(unknownClient)", nil),
                ("GET", "/admin/v1/integrations/\(theirs)/devices", "/admin/v1/integrations/\(unknownClient)/devices", nil),
                ("POST", "/admin/v1/integrations/\(theirs)/suspend", "/admin/v1/integrations/\(unknownClient)/suspend", "{}"),
                ("POST", "/admin/v1/integrations/\(theirs)/policy", "/admin/v1/integrations/\(unknownClient)/policy", "{}"),
                ("POST", "/admin/v1/devices/\(device.keyID)/block", "/admin/v1/devices/\(String(repeating: "ab", count: 32))/block", "{}"),
            ]
            for (method, path, unknown, json) in pairs {
                let answer = world.call(method, path, key: outsider, json: json)
                let reference = world.call(method, unknown, key: outsider, json: json)
                #expect(answer.status == 404, "\(path)")
                #expect(W.body(answer)["code"] as? String == W.body(reference)["code"] as? String, "\(path)")
                #expect(W.body(answer)["detail"] as? String == W.body(reference)["detail"] as? String, "\(path)")
            }
            let revoke = world.call("POST", "/admin/v1/integrations/\(theirs)/revoke", key: outsider, json: #"{"confirm":"\#(theirs)"}"#)
            #expect(revoke.status == 404 && W.code(revoke) == "integration_not_found")
            let token = world.call("POST", "/admin/v1/tokens/revoke", key: outsider, json: #"{"token":"\#(device.token)"}"#)
            let garbage = world.call("POST", "/admin/v1/tokens/revoke", key: outsider, json: #"{"token":"atk_nothing"}"#)
            #expect(
                token.status == 404 && W.code(token) == "token_not_found"
                    && W.body(token)["detail"] as? String == W.body(garbage)["detail"] as? String)
            // Nothing of the other workspace changed, and its list and audit log show none of it.
            #expect(try world.world.admin.show(clientID: theirs)?.status == .active)
            #expect(try world.world.admin.show(clientID: theirs)?.suspendedAt == nil)
            #expect(try world.authorizes(device.token))
            let list = W.body(world.call("GET", "/admin/v1/integrations", key: outsider))["integrations"] as? [Any]
            #expect(list?.isEmpty == true)
            let audit = W.body(world.call("GET", "/admin/v1/audit", key: outsider))["entries"] as? [[String: Any]] ?? []
            #expect(
                audit.allSatisfy { ($0["actor"] as? String) != "setup (test)" || ($0["target"] as? String)?.hasPrefix("admk_") == true })
            #expect(!audit.contains { ($0["target"] as? String) == theirs })
            // The home workspace's owner sees its own integration.
            let owner = try world.key(.owner)
            let mine = W.body(world.call("GET", "/admin/v1/integrations", key: owner))["integrations"] as? [[String: Any]] ?? []
            #expect(mine.map { $0["client_id"] as? String } == [theirs])
        }
    }

    @Test("no key, a malformed or unknown key, and a revoked key are refused with 401; revocation holds from the next request")
    func authentication() async throws {
        try await offThePool {
            let world = try AdminWorld()
            #expect(world.call("GET", "/admin/v1/integrations").status == 401)
            #expect(W.header(world.call("GET", "/admin/v1/integrations"), "WWW-Authenticate") == "Bearer realm=\"attestd-admin\"")
            #expect(world.call("GET", "/admin/v1/integrations", key: "adm_" + String(repeating: "A", count: 43)).status == 401)
            #expect(world.call("GET", "/admin/v1/integrations", key: "not-an-admin-key").status == 401)
            let issued = try world.admin.issueKey(workspaceID: W.workspace, role: .owner, name: "Leaver", actor: "setup")
            #expect(world.call("GET", "/admin/v1/integrations", key: issued.secret).status == 200)
            #expect(try world.admin.revokeKey(id: issued.record.id, actor: "alice (attestctl)") == true)
            let refused = world.call("GET", "/admin/v1/integrations", key: issued.secret)
            #expect(refused.status == 401 && W.code(refused) == "unauthorized")
        }
    }

    @Test("create validates as attestctl does, defaults to production, and answers 201 with the integration")
    func create() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let key = try world.key(.admin)
            let bad = world.call(
                "POST", "/admin/v1/integrations", key: key, json: #"{"name":"A","team_id":"abcde12345","bundle_ids":["a.b"]}"#)
            #expect(bad.status == 400 && W.code(bad) == "invalid_integration" && W.body(bad)["reason"] as? String == "team_id")
            let many = (0..<33).map { "\"com.example.a\($0)\"" }.joined(separator: ",")
            let tooMany = world.call(
                "POST", "/admin/v1/integrations", key: key, json: #"{"name":"A","team_id":"ABCDE12345","bundle_ids":[\#(many)]}"#)
            #expect(tooMany.status == 400 && W.body(tooMany)["reason"] as? String == "bundle_id_count")
            let none = world.call("POST", "/admin/v1/integrations", key: key, json: #"{"name":"A","team_id":"ABCDE12345","bundle_ids":[]}"#)
            #expect(none.status == 400)
            // A bidirectional override, a C1 control (JSON escapes, as a browser sends them) and a
            // key name over its bytes: 400 naming the field, and nothing made.
            let spoofed = world.call(
                "POST", "/admin/v1/integrations", key: key,
                json: #"{"name":"\u202Egnp.exe","team_id":"ABCDE12345","bundle_ids":["com.example.a"]}"#)
            #expect(spoofed.status == 400 && W.body(spoofed)["reason"] as? String == "name")
            let owner = try world.key(.owner)
            let control = world.call("POST", "/admin/v1/keys", key: owner, json: #"{"name":"Mallory\u0085","role":"user"}"#)
            #expect(control.status == 400 && W.body(control)["reason"] as? String == "name")
            let bomb = String(repeating: #"e\u0301\u0302\u0303\u0304"#, count: 100)
            let heavy = world.call("POST", "/admin/v1/keys", key: owner, json: #"{"name":"\#(bomb)","role":"user"}"#)
            #expect(heavy.status == 400 && W.body(heavy)["reason"] as? String == "name")
            #expect(try world.world.app.store.integrations().allSatisfy { !$0.name.unicodeScalars.contains("\u{202E}") })
            let good = world.call(
                "POST", "/admin/v1/integrations", key: key,
                json:
                    #"{"name":"Messages","team_id":"ABCDE12345","bundle_ids":["com.example.b","com.example.a"],"require_valid_receipt":true}"#
            )
            #expect(good.status == 201)
            let body = W.body(good)
            #expect(body["environment"] as? String == "production" && body["status"] as? String == "active")
            #expect(
                body["workspace_id"] as? String == W.workspace && body["bundle_ids"] as? [String] == ["com.example.a", "com.example.b"])
            #expect((body["policy"] as? [String: Any])?["require_valid_receipt"] as? Bool == true)
            let both = world.call(
                "POST", "/admin/v1/integrations", key: key,
                json: #"{"name":"B","team_id":"ABCDE12345","bundle_ids":["a.b"],"environment":"both"}"#)
            #expect(W.body(both)["environment"] as? String == "both")
            #expect(world.call("POST", "/admin/v1/integrations", key: key, json: #"{"name":"B","name":"C"}"#).status == 400)
        }
    }

    @Test("revocation needs the client ID typed back; without it nothing changes")
    func revokeConfirmation() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let key = try world.key(.owner)
            let target = try world.integration()
            for json in ["{}", #"{"confirm":"yes"}"#, #"{"confirm":"\#(world.world.integration.clientID)"}"#] {
                let refused = world.call("POST", "/admin/v1/integrations/\(target.clientID)/revoke", key: key, json: json)
                #expect(refused.status == 400 && W.body(refused)["reason"] as? String == "confirm")
            }
            #expect(try world.world.admin.show(clientID: target.clientID)?.status == .active)
            let done = world.call(
                "POST", "/admin/v1/integrations/\(target.clientID)/revoke", key: key, json: #"{"confirm":"\#(target.clientID)"}"#)
            #expect(done.status == 200 && W.body(done)["status"] as? String == "revoked")
        }
    }

    @Test("every change is in the workspace's audit log under the key's name")
    func audit() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let key = try world.key(.admin, name: "Dana (laptop)")
            let keyID = try #require(try world.world.app.store.adminKeys(workspaceID: W.workspace).first { $0.name == "Dana (laptop)" }).id
            let actor = "Dana (laptop) (\(keyID))"
            let target = try world.integration()
            _ = world.call("POST", "/admin/v1/integrations/\(target.clientID)/suspend", key: key, json: "{}")
            _ = world.call(
                "POST", "/admin/v1/integrations/\(target.clientID)/revoke", key: key, json: #"{"confirm":"\#(target.clientID)"}"#)
            let entries = W.body(world.call("GET", "/admin/v1/audit", key: key))["entries"] as? [[String: Any]] ?? []
            // Named by the key's name and its ID: two keys of one name (one revoked) are told apart.
            let mine = entries.filter { $0["actor"] as? String == actor }
            #expect(mine.map { $0["action"] as? String } == ["integration.revoke", "integration.suspend"])  // newest first
            #expect(mine.allSatisfy { $0["target"] as? String == target.clientID && $0["at"] is Int })
            // Every request's log line names the key, reads too.
            let lines = world.world.sink.all.split(separator: "\n").filter { $0.contains("\"route\":\"admin_audit\"") }
            #expect(!lines.isEmpty && lines.allSatisfy { $0.contains("\"actor\":\"\(actor)\"") })
            // A live key's name is unique in its workspace; a revoked key's name may be given again.
            let owner = try world.key(.owner)
            let twin = world.call("POST", "/admin/v1/keys", key: owner, json: #"{"name":"Dana (laptop)","role":"user"}"#)
            #expect(twin.status == 400 && W.body(twin)["reason"] as? String == "name")
            #expect(try world.admin.revokeKey(id: keyID, actor: "test") == true)
            #expect(world.call("POST", "/admin/v1/keys", key: owner, json: #"{"name":"Dana (laptop)","role":"user"}"#).status == 201)
        }
    }

    @Test("owners create and revoke their workspace's keys, never above their own role; admins may not")
    func keys() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let owner = try world.key(.owner)
            let admin = try world.key(.admin)
            #expect(world.call("POST", "/admin/v1/keys", key: admin, json: #"{"name":"x","role":"user"}"#).status == 403)
            let above = world.call("POST", "/admin/v1/keys", key: owner, json: #"{"name":"x","role":"primary_owner"}"#)
            #expect(above.status == 403 && W.code(above) == "forbidden_role")
            let made = world.call("POST", "/admin/v1/keys", key: owner, json: #"{"name":"CI deploy","role":"developer"}"#)
            #expect(made.status == 201)
            let secret = try #require(W.body(made)["key"] as? String)
            let id = try #require(W.body(made)["id"] as? String)
            #expect(world.call("GET", "/admin/v1/me", key: secret).status == 200)
            #expect(W.body(world.call("GET", "/admin/v1/me", key: secret))["role"] as? String == "developer")
            let primary = try world.admin.issueKey(workspaceID: W.workspace, role: .primaryOwner, name: "Founder", actor: "setup")
            #expect(world.call("POST", "/admin/v1/keys/\(primary.record.id)/revoke", key: owner, json: "{}").status == 403)
            let outsider = try world.key(.primaryOwner, workspace: W.otherWorkspace)
            #expect(world.call("POST", "/admin/v1/keys/\(id)/revoke", key: outsider, json: "{}").status == 404)
            #expect(world.call("POST", "/admin/v1/keys/\(id)/revoke", key: owner, json: "{}").status == 200)
            let ownerID = try #require(W.body(world.call("GET", "/admin/v1/me", key: owner))["key_id"] as? String)
            let itself = world.call("POST", "/admin/v1/keys/\(ownerID)/revoke", key: owner, json: "{}")
            #expect(itself.status == 400 && W.body(itself)["reason"] as? String == "own_key")
            #expect(world.call("GET", "/admin/v1/me", key: owner).status == 200)
            #expect(world.call("GET", "/admin/v1/me", key: secret).status == 401)
            let listed = W.body(world.call("GET", "/admin/v1/keys", key: owner))["keys"] as? [[String: Any]] ?? []
            #expect(listed.allSatisfy { $0["key"] == nil && $0["key_hash"] == nil })
        }
    }

    @Test("the admin API is not on the device-facing router")
    func notOnDeviceListener() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let key = try world.key(.owner)
            let response = world.world.app.router.respond(
                to: HTTPRequest(
                    method: "GET", path: "/admin/v1/integrations", headers: [HTTPHeader(name: "Authorization", value: "Bearer \(key)")]))
            #expect(response.status == 404)
            #expect(world.world.app.router.respond(to: HTTPRequest(method: "GET", path: "/console/")).status == 404)
        }
    }
}

@Suite("Admin listener")
struct AdminListenerTests {
    @Test("--admin-listen defaults to 127.0.0.1:8081, takes HOST:PORT or off, and refuses anything else")
    func configuration() throws {
        #expect(try ServerConfiguration.parse([], environment: [:]).adminListen == ListenAddress(host: "127.0.0.1", port: 8081))
        #expect(try ServerConfiguration.parse(["--admin-listen", "off"], environment: [:]).adminListen == nil)
        #expect(
            try ServerConfiguration.parse([], environment: ["ATTESTD_ADMIN_LISTEN": "[::1]:9000"]).adminListen
                == ListenAddress(host: "::1", port: 9000))
        #expect(throws: ServerConfiguration.UsageError.self) {
            try ServerConfiguration.parse(["--admin-listen", "8081"], environment: [:])
        }
    }

    @Test("the admin API and the console answer on the admin listener only; off starts none")
    func separateListener() async throws {
        try await offThePool {
            let world = try AdminWorld(listening: true)
            let key = try world.key(.user)
            let adminPort = try #require(world.world.server.adminHTTP?.port)
            #expect(adminPort != world.world.server.http.port)
            let admin = try RawHTTPClient(port: adminPort)
            #expect(try admin.request("GET", "/admin/v1/integrations", headers: [("Authorization", "Bearer \(key)")]).status == 200)
            #expect(try admin.request("GET", "/console/").status == 200)
            #expect(try admin.request("GET", "/v1/authorize").status == 404)
            let device = try world.world.client()
            #expect(try device.request("GET", "/admin/v1/integrations", headers: [("Authorization", "Bearer \(key)")]).status == 404)
            #expect(try device.request("GET", "/console/").status == 404)
            let without = try HTTPWorld(listening: true) { $0.adminListen = nil }
            #expect(without.server.adminHTTP == nil)
        }
    }
}
