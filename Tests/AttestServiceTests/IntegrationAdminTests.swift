import AttestCore
import AttestCrypto
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

@Suite("Integration administration")
struct IntegrationAdminTests {
    @Test(
        "refuses invalid team IDs, bundle IDs and counts without normalising",
        arguments: [
            ("abcde12345", ["com.example.app"], "team_id"), ("ABCDE12345", ["com.example.app "], "bundle_id"),
            ("ABCDE12345", [], "bundle_id_count"), ("ABCDE12345", (0...32).map { "com.example.app\($0)" }, "bundle_id_count"),
            ("ABCDE12345", ["com.example.app", "com.example.app"], "bundle_id_duplicate"),
        ])
    func validation(_ teamID: String, _ bundleIDs: [String], _ reason: String) throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let error = serviceError {
            try world.admin.create(workspaceID: "ws", name: "n", teamID: teamID, bundleIDs: bundleIDs, environments: [.production])
        }
        #expect(error?.code == .invalidIntegration)
        #expect(error?.subcode.identifier == reason)
        #expect(try world.admin.list().count == 1)
    }

    @Test("client IDs are clid_ plus 128 random bits and are never reused after revocation")
    func clientIDs() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        _ = try world.admin.revoke(clientID: world.integration.clientID)
        var seen: Set<String> = [world.integration.clientID]
        for index in 0..<20 {
            let record = try world.admin.create(
                workspaceID: "ws", name: "n\(index)", teamID: "ABCDE12345", bundleIDs: ["com.example.app"], environments: [.production])
            #expect(record.clientID.hasPrefix("clid_"))
            #expect(record.clientID.utf8.count == 5 + 32)
            #expect(seen.insert(record.clientID).inserted)
        }
        #expect(try world.admin.show(clientID: world.integration.clientID)?.status == .revoked)
    }
}
