import AttestCrypto
import AttestService
import AttestStorage
import AttestTesting
import Dispatch
import Foundation
import Synchronization
import Testing

/// The gateway's guarantee, under load: once a revocation has returned (as `attestctl` does, on
/// a connection of its own), no authorize answers 200 for what it revoked, however many checks
/// are in flight. Whatever makes authorize fast must keep this.
@Suite("Revocation under load")
struct RevocationUnderLoadTests {
    enum Revocation: String, CaseIterable, Sendable {
        case integrationRevoke = "integration revoke"
        case tokenRevoke = "token revoke"
        case deviceBlock = "device block"
        case integrationSuspend = "integration suspend"
    }

    /// One authorize: when it was sent and what it got.
    struct Check: Sendable {
        let sent: ContinuousClock.Instant
        let status: Int
    }

    @Test(
        "no authorize sent after a revocation returned answers 200, with four clients checking as fast as they can",
        arguments: StoreBackend.available, Revocation.allCases)
    func revocationIsImmediate(_ backend: StoreBackend, _ revocation: Revocation) throws {
        let world = try HTTPWorld(backend, listening: true)
        // As attestd does: the node keeps token answers under its lease (SQLite: always).
        let postgres = world.app.store as? PostgresTokenStore
        postgres?.keepAnswers()
        defer { try? postgres?.close() }
        let fromMemory = { (world.app.store as? SQLiteTokenStore)?.lookupsFromMemory ?? postgres?.lookupsFromMemory ?? 0 }
        let device = try SyntheticDevice()
        let token = try world.attest(try world.client(), device: device)
        let port = world.server.http.port
        let stop = Atomic<Bool>(false)
        let revoked = Atomic<Bool>(false)
        // Counted as the load runs, so that the test waits for enough checks on either side of
        // the revocation rather than for a time a loaded machine may not keep.
        let accepted = Atomic<Int>(0)
        let sentAfterRevocation = Atomic<Int>(0)
        let checks = Mutex<[Check]>([])
        let clients = DispatchGroup()
        for _ in 0..<4 {
            clients.enter()
            Thread {
                defer { clients.leave() }
                guard let client = try? RawHTTPClient(port: port) else { return }
                var mine: [Check] = []
                while !stop.load(ordering: .relaxed) {
                    let afterRevocation = revoked.load(ordering: .acquiring)
                    let sent = ContinuousClock.now
                    guard let response = try? client.request("GET", "/v1/authorize", headers: [("Authorization", "Bearer \(token)")])
                    else { break }
                    mine.append(Check(sent: sent, status: response.status))
                    if response.status == 200 { accepted.add(1, ordering: .relaxed) }
                    if afterRevocation { sentAfterRevocation.add(1, ordering: .relaxed) }
                }
                checks.withLock { $0 += mine }
            }.start()
        }
        Self.waitUntil { accepted.load(ordering: .relaxed) > 50 && fromMemory() > 20 }
        switch revocation {
        case .integrationRevoke: _ = try world.admin.revoke(clientID: world.integration.clientID)
        case .tokenRevoke: #expect(try world.admin.revokeToken(hash: Digest.sha256(Array(token.utf8))))
        case .deviceBlock: _ = try world.admin.blockDevice(keyID: device.keyID)
        case .integrationSuspend: _ = try world.admin.setSuspended(clientID: world.integration.clientID, true)
        }
        let returned = ContinuousClock.now
        revoked.store(true, ordering: .releasing)
        Self.waitUntil { sentAfterRevocation.load(ordering: .relaxed) > 50 }
        stop.store(true, ordering: .relaxed)
        clients.wait()

        let all = checks.withLock { $0 }
        let before = all.filter { $0.sent < returned }
        let after = all.filter { $0.sent >= returned }
        #expect(before.filter { $0.status == 200 }.count > 20, "the load ran before the revocation: \(before.count) checks")
        #expect(after.count > 20, "the load ran after the revocation: \(after.count) checks")
        #expect(after.allSatisfy { $0.status == 401 }, "\(after.filter { $0.status == 200 }.count) checks after the revocation got 200")
        #expect(fromMemory() > 20, "the checks before the revocation were served from memory")
    }

    /// Waits for `condition`, for 20 seconds at most (the expectations then say what was missing).
    static func waitUntil(_ condition: () -> Bool) {
        _ = eventually(within: 20, condition)
    }
}
