import AttestCore
import AttestCrypto
import AttestServer
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

/// Unblocking a device: the operator's choice (`--device-unblock on`) for workspace admins,
/// always attestctl's; never a revoked integration's device; audited; its old tokens stay revoked.
@Suite("Device unblock")
struct DeviceUnblockTests {
    typealias W = AdminWorld

    @Test("off by default: an admin gets unblock_disabled (403), the device stays blocked, and /me says the console may not")
    func offByDefault() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let device = try world.device()
            let key = try world.key(.admin)
            #expect(world.call("POST", "/admin/v1/devices/\(device.keyID)/block", key: key, json: "{}").status == 200)
            let refused = world.call("POST", "/admin/v1/devices/\(device.keyID)/unblock", key: key, json: "{}")
            #expect(refused.status == 403 && W.code(refused) == "unblock_disabled")
            #expect(W.body(world.call("GET", "/admin/v1/me", key: key))["can_unblock_devices"] as? Bool == false)
            let keyID = try #require(Hex.decode(device.keyID))
            let store = try world.world.location.open(at: 0, connections: 1)
            #expect(try store.device(keyID: keyID)?.status == .revoked)
        }
    }

    @Test(
        "on: an admin unblocks (audited), the device refreshes again, its old token stays refused; a user may not; a revoked integration's device stays blocked"
    )
    func allowed() async throws {
        try await offThePool {
            let world = try AdminWorld { $0.deviceUnblock = true }
            var synthetic = try SyntheticDevice()
            let client = try world.world.client()
            let token = try world.world.attest(client, device: synthetic)
            let keyID = Hex.encode(synthetic.keyID)
            let admin = try world.key(.admin), user = try world.key(.user)
            #expect(W.body(world.call("GET", "/admin/v1/me", key: admin))["can_unblock_devices"] as? Bool == true)
            #expect(W.body(world.call("GET", "/admin/v1/me", key: user))["can_unblock_devices"] as? Bool == false)
            #expect(world.call("POST", "/admin/v1/devices/\(keyID)/block", key: admin, json: "{}").status == 200)
            let byUser = world.call("POST", "/admin/v1/devices/\(keyID)/unblock", key: user, json: "{}")
            #expect(byUser.status == 403 && W.code(byUser) == "forbidden_role")
            let unblocked = world.call("POST", "/admin/v1/devices/\(keyID)/unblock", key: admin, json: "{}")
            #expect(unblocked.status == 200 && W.body(unblocked)["changed"] as? Bool == true)
            let again = world.call("POST", "/admin/v1/devices/\(keyID)/unblock", key: admin, json: "{}")
            #expect(again.status == 200 && W.body(again)["changed"] as? Bool == false)
            #expect(try !world.authorizes(token))
            let refreshed = try client.postJSON("/v1/token", try world.world.refreshBody(client, device: &synthetic))
            #expect(refreshed.status == 200)
            #expect(try world.authorizes(try #require(world.world.json(refreshed)["access_token"] as? String)))
            let audit = W.body(world.call("GET", "/admin/v1/audit?action=device.unblock", key: admin))["entries"] as? [[String: Any]] ?? []
            #expect(audit.count == 1 && audit.first?["target"] as? String == keyID)

            // A revoked integration's devices are blocked for good.
            #expect(try world.world.admin.revoke(clientID: world.world.integration.clientID) != nil)
            let revoked = world.call("POST", "/admin/v1/devices/\(keyID)/unblock", key: admin, json: "{}")
            #expect(revoked.status == 403 && W.code(revoked) == "integration_revoked")
            #expect(try world.world.admin.unblockDevice(keyID: synthetic.keyID) == .integrationRevoked)
        }
    }
}
