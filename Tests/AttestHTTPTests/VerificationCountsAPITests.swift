import AttestService
import AttestTesting
import Foundation
import Testing

/// `GET /admin/v1/integrations/{client_id}/verifications`: the counts the console charts, after a
/// flush, for any role of the integration's workspace only.
@Suite("Verification counts API")
struct VerificationCountsAPITests {
    typealias W = AdminWorld

    static func sum(_ buckets: [[String: Any]], _ field: String) -> Int { buckets.reduce(0) { $0 + ($1[field] as? Int ?? 0) } }

    @Test("verified, refused by reason and tokens minted, per hour over 24 hours and per day over 30; any role; 404 for another workspace")
    func counts() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let clientID = world.world.integration.clientID
            _ = try world.device()
            _ = try world.device()
            let client = try world.world.client()
            let stranger = try SyntheticPKI(validAround: Int64(Date().timeIntervalSince1970))
            let refused = try client.postJSON("/v1/attest", try world.world.attestBody(client, device: SyntheticDevice(), pki: stranger))
            let reason = try #require(world.world.json(refused)["reason"] as? String)
            #expect(refused.status == 401)
            world.world.app.flushVerifications()

            let user = try world.key(.user)
            let day = W.body(world.call("GET", "/admin/v1/integrations/\(clientID)/verifications", key: user))
            let hours = try #require(day["buckets"] as? [[String: Any]])
            #expect(day["range"] as? String == "24h" && day["bucket_seconds"] as? Int == 3600 && hours.count == 24)
            #expect(Self.sum(hours, "verified") == 2 && Self.sum(hours, "tokens") == 2 && Self.sum(hours, "refused") == 1)
            #expect((day["refusals"] as? [String: Any])?[reason] as? Int == 1)
            let month = W.body(world.call("GET", "/admin/v1/integrations/\(clientID)/verifications?range=30d", key: user))
            let days = try #require(month["buckets"] as? [[String: Any]])
            #expect(days.count == 30 && month["bucket_seconds"] as? Int == 86_400 && Self.sum(days, "verified") == 2)

            let bad = world.call("GET", "/admin/v1/integrations/\(clientID)/verifications?range=7d", key: user)
            #expect(bad.status == 400 && W.body(bad)["reason"] as? String == "range")
            let outsider = try world.key(.owner, workspace: W.otherWorkspace)
            #expect(world.call("GET", "/admin/v1/integrations/\(clientID)/verifications", key: outsider).status == 404)
        }
    }
}
