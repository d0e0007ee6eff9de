import AttestService
import AttestStorage
import Foundation
import Testing

/// Admin keys' expiry, disabling and last use through the admin API: what an owner may do to
/// which key, what the key's holder gets meanwhile, and the audit rows.
@Suite("Admin key lifecycle API")
struct AdminKeyLifecycleAPITests {
    typealias W = AdminWorld

    @Test("a key made with expires_in works until then and gets 401 from then on; a lifetime out of range is refused")
    func expiry() async throws {
        try await offThePool {
            let clock = SettableWallClock(Int64(Date().timeIntervalSince1970))
            let world = try AdminWorld(clock: clock)
            let owner = try world.key(.owner)
            for bad in ["10", "-3600", "63072001", "\"1d\"", "true"] {
                let refused = world.call("POST", "/admin/v1/keys", key: owner, json: #"{"name":"x","role":"user","expires_in":\#(bad)}"#)
                #expect(refused.status == 400 && W.body(refused)["reason"] as? String == "expires_in", "\(bad): \(W.body(refused))")
            }
            #expect(try world.admin.keys(workspaceID: W.workspace).count == 1)
            let made = world.call("POST", "/admin/v1/keys", key: owner, json: #"{"name":"Contractor","role":"user","expires_in":3600}"#)
            #expect(made.status == 201)
            let secret = try #require(W.body(made)["key"] as? String)
            #expect(W.body(made)["expires_at"] as? Int == Int(clock.now()) + 3600)
            #expect(W.body(made)["status"] as? String == "active")
            clock.advance(3599)
            #expect(world.call("GET", "/admin/v1/me", key: secret).status == 200)
            clock.advance(1)
            #expect(world.call("GET", "/admin/v1/me", key: secret).status == 401)
            let listed = W.body(world.call("GET", "/admin/v1/keys", key: owner))["keys"] as? [[String: Any]] ?? []
            #expect(listed.first { $0["name"] as? String == "Contractor" }?["status"] as? String == "expired")
        }
    }

    @Test(
        "an owner disables and enables a key: refused meanwhile, sessions ended, audited; never itself, a higher role or the primary owner")
    func disableEnable() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let owner = try world.key(.owner)
            let made = world.call("POST", "/admin/v1/keys", key: owner, json: #"{"name":"Laptop","role":"admin"}"#)
            let secret = try #require(W.body(made)["key"] as? String)
            let id = try #require(W.body(made)["id"] as? String)
            let session = try ConsoleSessionTests.signIn(world, secret)
            let inConsole = [ConsoleSessionTests.cookie(session.cookie)]
            #expect(W.body(world.call("GET", "/console/session", headers: inConsole))["signed_in"] as? Bool == true)

            let admin = try world.key(.admin)
            #expect(world.call("POST", "/admin/v1/keys/\(id)/disable", key: admin, json: "{}").status == 403)
            let disabled = world.call("POST", "/admin/v1/keys/\(id)/disable", key: owner, json: "{}")
            #expect(disabled.status == 200)
            #expect(W.body(disabled)["status"] as? String == "disabled" && W.body(disabled)["changed"] as? Bool == true)
            let refused = world.call("GET", "/admin/v1/me", key: secret)
            #expect(refused.status == 401 && W.code(refused) == "unauthorized")
            #expect(W.body(world.call("GET", "/console/session", headers: inConsole))["signed_in"] as? Bool == false)
            #expect(W.body(world.call("POST", "/admin/v1/keys/\(id)/disable", key: owner, json: "{}"))["changed"] as? Bool == false)

            let enabled = world.call("POST", "/admin/v1/keys/\(id)/enable", key: owner, json: "{}")
            #expect(enabled.status == 200 && W.body(enabled)["status"] as? String == "active")
            #expect(world.call("GET", "/admin/v1/me", key: secret).status == 200)
            // Enabling brings the key back, not the sessions its disabling ended.
            #expect(W.body(world.call("GET", "/console/session", headers: inConsole))["signed_in"] as? Bool == false)

            let ownerID = try #require(W.body(world.call("GET", "/admin/v1/me", key: owner))["key_id"] as? String)
            let itself = world.call("POST", "/admin/v1/keys/\(ownerID)/disable", key: owner, json: "{}")
            #expect(itself.status == 400 && W.body(itself)["reason"] as? String == "own_key")
            let higher = try world.admin.issueKey(workspaceID: W.workspace, role: .primaryOwner, name: "Founder", actor: "setup")
            #expect(world.call("POST", "/admin/v1/keys/\(higher.record.id)/disable", key: owner, json: "{}").status == 403)
            let outsider = try world.key(.primaryOwner, workspace: W.otherWorkspace)
            #expect(world.call("POST", "/admin/v1/keys/\(id)/disable", key: outsider, json: "{}").status == 404)
            #expect(world.call("POST", "/admin/v1/keys/admk_0000000000000000/enable", key: owner, json: "{}").status == 404)

            let audit = W.body(world.call("GET", "/admin/v1/audit?action=admin-key.disable,admin-key.enable", key: owner))
            let rows = audit["entries"] as? [[String: Any]] ?? []
            #expect(rows.map { $0["action"] as? String } == ["admin-key.enable", "admin-key.disable"])
            #expect(rows.allSatisfy { $0["target"] as? String == id })
        }
    }

    @Test("a key's last use is shown (to the minute) once it has made a request")
    func lastUsed() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let owner = try world.key(.owner)
            let made = world.call("POST", "/admin/v1/keys", key: owner, json: #"{"name":"Idle","role":"user"}"#)
            let secret = try #require(W.body(made)["key"] as? String)
            func listed() -> [String: Any]? {
                (W.body(world.call("GET", "/admin/v1/keys", key: owner))["keys"] as? [[String: Any]])?.first {
                    $0["name"] as? String == "Idle"
                }
            }
            #expect(listed()?["last_used_at"] is NSNull)
            #expect(world.call("GET", "/admin/v1/integrations", key: secret).status == 200)
            let used = try #require(listed()?["last_used_at"] as? Int)
            #expect(abs(used - Int(Date().timeIntervalSince1970)) < 5)
        }
    }

    @Test("revoke with compromised: the leaked key, the keys it created and theirs are revoked; the caller's key stays")
    func compromised() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let owner = try world.key(.owner)
            func make(_ by: String, _ name: String, _ role: String) throws -> (secret: String, id: String) {
                let made = world.call("POST", "/admin/v1/keys", key: by, json: #"{"name":"\#(name)","role":"\#(role)"}"#)
                return (try #require(W.body(made)["key"] as? String), try #require(W.body(made)["id"] as? String))
            }
            let leaked = try make(owner, "Leaked", "owner")
            let backdoor = try make(leaked.secret, "Backdoor", "owner")
            let nested = try make(backdoor.secret, "Nested", "user")
            let bystander = try make(owner, "Bystander", "user")
            let bad = world.call("POST", "/admin/v1/keys/\(leaked.id)/revoke", key: owner, json: #"{"compromised":"yes"}"#)
            #expect(bad.status == 400 && W.body(bad)["reason"] as? String == "compromised")
            let done = world.call("POST", "/admin/v1/keys/\(leaked.id)/revoke", key: owner, json: #"{"compromised":true}"#)
            #expect(done.status == 200)
            #expect(W.body(done)["revoked"] as? [String] == [leaked.id, backdoor.id, nested.id])
            for secret in [leaked.secret, backdoor.secret, nested.secret] {
                #expect(world.call("GET", "/admin/v1/me", key: secret).status == 401)
            }
            #expect(world.call("GET", "/admin/v1/me", key: bystander.secret).status == 200)
            #expect(world.call("GET", "/admin/v1/me", key: owner).status == 200)
        }
    }
}
