import AttestClock
import AttestTesting
import Foundation
import Synchronization
import Testing

@testable import AttestStorage

/// Token answers kept in memory on PostgreSQL: a node keeps them under its answer lease, and a
/// change made by another store (another node, attestctl) returns only once that node has
/// withdrawn them, so the next lookup after it returned is refused. Serialized, with short
/// leases: its steps block (a revocation waits for the node), and `swift test` runs the async
/// suites (the client's) on the same few cooperative threads.
@Suite(
    "PostgreSQL: token answers from memory and the revocations that wait for them",
    .enabled(if: StoreBackend.available.contains(.postgresql)), .serialized)
struct PostgresAnswerLeaseTests {
    static let time: Int64 = 1_800_000_000

    /// A node that keeps answers (renewing slowly, so that a revocation which did not wait for it
    /// would find it still serving), and a second store on the same database for the changes.
    struct World {
        let location: TestStoreLocation
        let settings: PostgresSettings
        let node: PostgresTokenStore
        let other: PostgresTokenStore
        let integration: IntegrationRecord

        /// `clock`: the node's (the other store's is the system's, since a change it makes waits
        /// for the node's renewals).
        init(
            renewEvery: Duration = .milliseconds(200), lasts: Duration = .seconds(3), waitLimit: Duration = .seconds(10),
            stopWait: Duration = .seconds(10), clock: any TimerClock = SystemTimerClock()
        ) throws {
            location = try TestStoreLocation(.postgresql)
            _ = try location.open(at: PostgresAnswerLeaseTests.time)
            guard case .postgresql(let settings) = location.location else { throw StorageError.misuse("not PostgreSQL") }
            self.settings = settings
            let timing = AnswerLeaseTiming(renewEvery: renewEvery, lasts: lasts, waitLimit: waitLimit, stopWait: stopWait)
            node = PostgresTokenStore(unconnected: settings, answerTiming: timing, clock: clock)
            other = PostgresTokenStore(unconnected: settings, answerTiming: timing)
            integration = PostgresStoreTests.integration("clid_lease")
            try other.insertIntegration(integration, audit: nil)
        }

        func token(_ seed: UInt8) -> TokenRecord {
            TokenRecord(
                tokenHash: [UInt8](repeating: seed, count: 32), clientID: integration.clientID, workspaceID: integration.workspaceID,
                keyID: [UInt8](repeating: seed, count: 32), scope: "messages", issuedAt: PostgresAnswerLeaseTests.time,
                expiresAt: PostgresAnswerLeaseTests.time + 3600)
        }

        /// Registers device `seed` with token `seed`.
        func register(_ seed: UInt8) throws {
            let challenge = [UInt8](repeating: seed, count: 32)
            #expect(
                try other.insertChallenge(
                    id: challenge, clientID: integration.clientID, createdAt: PostgresAnswerLeaseTests.time,
                    expiresAt: PostgresAnswerLeaseTests.time + 300))
            let device = DeviceRecord(
                keyID: [UInt8](repeating: seed, count: 32), clientID: integration.clientID,
                publicKey: [0x04] + [UInt8](repeating: seed, count: 64), counter: 0, environment: .production,
                receipt: [1, 2, 3], status: .active, createdAt: PostgresAnswerLeaseTests.time, updatedAt: PostgresAnswerLeaseTests.time,
                trustAnchor: String(repeating: "ab", count: 32), appID: "ABCDE12345.com.example.a")
            let outcome = try other.registerDevice(
                device, firstToken: token(seed), consumingChallenge: challenge, at: PostgresAnswerLeaseTests.time)
            #expect(outcome == .registered)
        }

        /// Registers device 1 with token 1, starts the node's lease, and waits until the node
        /// answers token 1 from memory.
        func nodeKeepingToken() throws {
            try register(1)
            node.keepAnswers()
            try warm(1)
        }

        /// Once the node's lease allows, looks token `seed` up twice: the database's answer is
        /// kept, and the second comes from memory.
        func warm(_ seed: UInt8) throws {
            #expect(eventually { node.answers.stamps.current() != nil }, "the node's lease never allowed answers from memory")
            let before = node.lookupsFromMemory
            for _ in 0..<2 {
                #expect(try node.activeToken(hash: token(seed).tokenHash, at: PostgresAnswerLeaseTests.time + 1) == token(seed))
            }
            #expect(node.lookupsFromMemory == before + 1, "the node did not answer from memory")
        }

        /// The answer epoch as the database holds it.
        func epoch() throws -> Int64 {
            try PostgresConnection(settings).query("SELECT epoch FROM answer_epoch").int64(0, 0)
        }

        /// The node's lease rows as the database holds them.
        func leaseRows() throws -> Int64 {
            try PostgresConnection(settings).query("SELECT count(*) FROM answer_leases").int64(0, 0)
        }
    }

    enum Change: String, CaseIterable, Sendable {
        case tokenRevoke = "token revoke"
        case deviceBlock = "device block"
        case integrationRevoke = "integration revoke"
        case integrationSuspend = "integration suspend"
    }

    @Test(
        "once a change made on another store has returned, the node that answered the token from memory refuses it",
        arguments: Change.allCases)
    func changeWaitsForTheNode(_ change: Change) throws {
        let world = try World()
        defer { try? world.node.close() }
        try world.nodeKeepingToken()
        let token = world.token(1)
        switch change {
        case .tokenRevoke: #expect(try world.other.revokeToken(hash: token.tokenHash, audit: nil))
        case .deviceBlock: #expect(try world.other.blockDevice(keyID: token.keyID, at: Self.time + 1, audit: nil) == 1)
        case .integrationRevoke: _ = try world.other.revokeIntegration(clientID: token.clientID, at: Self.time + 1, audit: nil)
        case .integrationSuspend: #expect(try world.other.setSuspended(clientID: token.clientID, at: Self.time + 1, audit: nil) == true)
        }
        let fromMemory = world.node.lookupsFromMemory
        #expect(try world.node.activeToken(hash: token.tokenHash, at: Self.time + 2) == nil)
        #expect(world.node.lookupsFromMemory == fromMemory, "the refused lookup was answered from memory")
    }

    @Test(
        "a change by a binary that does not wait (the previous release's attestctl: plain SQL) raises the epoch, and the node stops answering from memory at its next renewal",
        arguments: [
            "DELETE FROM tokens WHERE client_id = 'clid_lease'",
            "UPDATE devices SET status = 'revoked'",
            "UPDATE integrations SET suspended_at = 1",
            "UPDATE integrations SET status = 'revoked', revoked_at = 1800000001",
            "UPDATE integrations SET max_live_tokens_per_device = 1",
        ])
    func changeByAnyBinary(_ statement: String) throws {
        let clock = ManualTimerClock()
        let world = try World(renewEvery: .milliseconds(50), clock: clock)
        defer { try? world.node.close() }
        try world.nodeKeepingToken()
        let before = try world.epoch()
        try PostgresConnection(world.settings).query(statement)
        #expect(try world.epoch() == before + 1)
        let expected: TokenRecord? = statement.contains("max_live_tokens") ? world.token(1) : nil
        // Until the node's next renewal, it still answers from memory: nothing told it.
        let fromMemory = world.node.lookupsFromMemory
        #expect(try world.node.activeToken(hash: world.token(1).tokenHash, at: Self.time + 1) == world.token(1))
        #expect(world.node.lookupsFromMemory == fromMemory + 1)
        clock.advance(by: .milliseconds(50))
        #expect(try world.node.activeToken(hash: world.token(1).tokenHash, at: Self.time + 1) == expected)
        _ = try world.node.activeToken(hash: world.token(1).tokenHash, at: Self.time + 1)
        #expect(world.node.lookupsFromMemory == fromMemory + 1, "answered from memory after the renewal that followed the change")
    }

    @Test("what cannot turn a 200 into a 401 raises no epoch: registrations, refreshes, a capped integration's trim, the purge")
    func nothingToRetire() throws {
        let world = try World()
        let start = try world.epoch()
        try world.register(1)
        try world.register(2)
        // A token that expired long ago, for the purge.
        let challenge = [UInt8](repeating: 3, count: 32)
        #expect(
            try world.other.insertChallenge(
                id: challenge, clientID: world.integration.clientID, createdAt: Self.time, expiresAt: Self.time + 300))
        var expired = world.token(3)
        expired.issuedAt = 999_000_000
        expired.expiresAt = 1_000_000_000
        var device = try #require(try world.other.device(keyID: world.token(1).keyID))
        device.keyID = expired.keyID
        #expect(try world.other.registerDevice(device, firstToken: expired, consumingChallenge: challenge, at: Self.time) == .registered)
        // A refresh of an uncapped integration.
        func refresh(_ seed: UInt8, counter: UInt32, keepingLatest: Int?) throws {
            let id = [UInt8](repeating: seed, count: 32)
            #expect(
                try world.other.insertChallenge(
                    id: id, clientID: world.integration.clientID, createdAt: Self.time, expiresAt: Self.time + 300))
            var token = world.token(seed)
            token.keyID = world.token(1).keyID
            #expect(
                try world.other.advanceCounter(
                    keyID: token.keyID, from: counter - 1, to: counter, at: Self.time, token: token, consumingChallenge: id,
                    keepingLatest: keepingLatest) == .advanced)
        }
        try refresh(10, counter: 1, keepingLatest: nil)
        #expect(try world.epoch() == start, "a registration or a refresh raised the epoch")
        #expect(try world.other.purgeExpired(at: Self.time) == 1)
        #expect(try world.epoch() == start, "the purge of an expired token raised the epoch")
        #expect(
            try world.other.updatePolicy(
                clientID: world.integration.clientID, policy: IntegrationPolicy(), maxLiveTokensPerDevice: 1, audit: nil) == true)
        let capped = try world.epoch()
        #expect(capped > start)
        try refresh(11, counter: 2, keepingLatest: 1)
        #expect(try world.other.liveTokenCount(keyID: world.token(1).keyID, at: Self.time) == 1, "the capped refresh trimmed nothing")
        #expect(try world.epoch() == capped, "a capped integration's trim raised the epoch")
    }

    @Test("a token cap set on another store retires the node's answers, and the capped integration's tokens are no longer kept")
    func capStopsKeeping() throws {
        let world = try World()
        defer { try? world.node.close() }
        try world.nodeKeepingToken()
        #expect(
            try world.other.updatePolicy(
                clientID: world.integration.clientID, policy: IntegrationPolicy(), maxLiveTokensPerDevice: 1, audit: nil) == true)
        let fromMemory = world.node.lookupsFromMemory
        for _ in 0..<3 { #expect(try world.node.activeToken(hash: world.token(1).tokenHash, at: Self.time + 2) == world.token(1)) }
        #expect(world.node.lookupsFromMemory == fromMemory, "a capped integration's token was answered from memory")
    }

    @Test("the asynchronous lookup (the HTTP path) keeps and serves answers the same way, and refuses after a revocation returned")
    func deferredLookups() throws {
        let world = try World()
        defer { try? world.node.close() }
        try world.nodeKeepingToken()
        func deferred() throws -> TokenRecord? {
            let answer = DispatchSemaphore(value: 0)
            let result = Mutex<Result<TokenRecord?, StorageError>?>(nil)
            world.node.activeToken(hash: world.token(1).tokenHash, at: Self.time + 1) { reply in
                result.withLock { $0 = reply }
                answer.signal()
            }
            #expect(answer.wait(timeout: .now() + 10) == .success)
            return try result.withLock { $0 }?.get()
        }
        let fromMemory = world.node.lookupsFromMemory
        #expect(try deferred() == world.token(1))
        #expect(world.node.lookupsFromMemory == fromMemory + 1)
        #expect(try world.other.revokeToken(hash: world.token(1).tokenHash, audit: nil))
        #expect(try deferred() == nil)
    }

    @Test("a node that stops renewing holds a revocation no longer than its lease, and by then answers nothing from memory")
    func silentNode() throws {
        let world = try World(lasts: .seconds(1))
        try world.register(1)
        // One renewal, by hand, and none after: a node whose process hangs.
        let renewed = ContinuousClock.now
        world.node.answers.stamps.renewOnce()
        #expect(world.node.answers.stamps.current() != nil)
        try world.warm(1)
        #expect(try world.other.revokeToken(hash: world.token(1).tokenHash, audit: nil))
        // The lease ran out on the database's clock at least 1 s after the renewal was sent.
        let waited = ContinuousClock.now - renewed
        #expect(waited > .milliseconds(950) && waited < .seconds(5), "the revocation returned \(waited) after the renewal of a 1 s lease")
        #expect(world.node.answers.stamps.current() == nil)
        #expect(try world.node.activeToken(hash: world.token(1).tokenHash, at: Self.time + 2) == nil)
    }

    @Test("a lease that never acknowledges makes the revocation throw after the wait limit, saying it is committed")
    func waitLimit() throws {
        let world = try World(waitLimit: .milliseconds(300))
        try world.register(1)
        try PostgresConnection(world.settings).query(
            "INSERT INTO answer_leases (node, acked_epoch, expires_at) VALUES ('node_stuck', -1, clock_timestamp() + interval '1 hour')")
        let error = #expect(throws: StorageError(.unavailable, "")) {
            try world.other.revokeToken(hash: world.token(1).tokenHash, audit: nil)
        }
        #expect(error?.reason.contains("committed") == true)
        #expect(try world.other.activeToken(hash: world.token(1).tokenHash, at: Self.time + 1) == nil)
    }

    @Test("a node's clean stop removes its lease, so no revocation waits for it to run out, and the leases of nodes dead for an hour")
    func closeRemovesTheLease() throws {
        let world = try World(lasts: .seconds(30), waitLimit: .seconds(5))
        try world.nodeKeepingToken()
        let connection = try PostgresConnection(world.settings)
        try connection.query(
            "INSERT INTO answer_leases VALUES ('node_long_dead', 0, clock_timestamp() - interval '2 hours'), "
                + "('node_just_dead', 0, clock_timestamp() - interval '10 minutes')")
        #expect(try world.leaseRows() == 3)
        try world.node.close()
        #expect(try connection.query("SELECT node FROM answer_leases").string(0, 0) == "node_just_dead")
        #expect(try world.leaseRows() == 1)
        let started = ContinuousClock.now
        #expect(try world.other.revokeToken(hash: world.token(1).tokenHash, audit: nil))
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test(
        "a revocation that finds nothing to change (a retry, a second administrator) still returns only once the nodes dropped what the first one retired"
    )
    func retryWaitsToo() throws {
        // Renewing every 0.5 s: the node is still serving from memory when the retry begins.
        let world = try World(renewEvery: .milliseconds(500), lasts: .seconds(3))
        defer { try? world.node.close() }
        try world.nodeKeepingToken()
        // The first call has committed, and is still waiting for the node.
        try PostgresConnection(world.settings).query("DELETE FROM tokens WHERE token_hash = $1", [.blob(world.token(1).tokenHash)])
        let epoch = try world.epoch()
        #expect(try !world.other.revokeToken(hash: world.token(1).tokenHash, audit: nil))
        #expect(try world.epoch() == epoch + 1, "the retry did not raise the epoch")
        let fromMemory = world.node.lookupsFromMemory
        #expect(try world.node.activeToken(hash: world.token(1).tokenHash, at: Self.time + 2) == nil)
        #expect(world.node.lookupsFromMemory == fromMemory, "the retry returned while the node still answered from memory")
    }
}
