import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// The contract of the incident levers: suspension, blocking, revocation of one token.
extension TokenStoreContractTests {
    // MARK: Incident levers

    @Test(
        "a suspended integration's tokens are refused and come back on resume; a revoked one cannot be suspended",
        arguments: StoreBackend.available)
    func suspension(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        let hash = world.token(1, keySeed: 1).tokenHash
        let challenge = try world.challenge(2)  // issued before the suspension, spent after it
        #expect(try world.store.setSuspended(clientID: "clid_contract", at: Self.time, audit: nil) == true)
        #expect(try world.store.integration(clientID: "clid_contract")?.suspendedAt == Self.time)
        #expect(try world.store.activeToken(hash: hash, at: Self.time) == nil)
        let refresh = try world.store.advanceCounter(
            keyID: world.device(1).keyID, from: 0, to: 1, at: Self.time, token: world.token(2, keySeed: 1),
            consumingChallenge: challenge, keepingLatest: nil)
        #expect(refresh == .integrationSuspended)
        #expect(try world.store.setSuspended(clientID: "clid_contract", at: nil, audit: nil) == true)
        #expect(try world.store.activeToken(hash: hash, at: Self.time) != nil)
        #expect(try world.store.setSuspended(clientID: "clid_missing", at: Self.time, audit: nil) == nil)
        _ = try world.store.revokeIntegration(clientID: "clid_contract", at: Self.time, audit: nil)
        #expect(try world.store.setSuspended(clientID: "clid_contract", at: Self.time, audit: nil) == false)
    }

    @Test("one token can be revoked alone, and a blocked device's tokens die with it", arguments: StoreBackend.available)
    func tokenAndDeviceLevers(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        try world.register(2)
        #expect(try world.store.revokeToken(hash: world.token(1, keySeed: 1).tokenHash, audit: nil))
        #expect(try !world.store.revokeToken(hash: world.token(1, keySeed: 1).tokenHash, audit: nil))
        #expect(try world.store.activeToken(hash: world.token(1, keySeed: 1).tokenHash, at: Self.time) == nil)
        #expect(try world.store.activeToken(hash: world.token(2, keySeed: 2).tokenHash, at: Self.time) != nil)
        #expect(try world.store.blockDevice(keyID: world.device(2).keyID, at: Self.time, audit: nil) == 1)
        #expect(try world.store.activeToken(hash: world.token(2, keySeed: 2).tokenHash, at: Self.time) == nil)
        #expect(try world.store.device(keyID: world.device(2).keyID)?.status == .revoked)
        #expect(try world.store.blockDevice(keyID: [UInt8](repeating: 77, count: 32), at: Self.time, audit: nil) == nil)
    }

    @Test(
        "a blocked device unblocks once (its old tokens stay deleted), an active one is not blocked, an unknown one is not found, a revoked integration's stays blocked",
        arguments: StoreBackend.available)
    func unblock(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        let keyID = world.device(1).keyID
        #expect(try world.store.unblockDevice(keyID: keyID, at: Self.time, audit: nil) == .notBlocked)
        #expect(try world.store.blockDevice(keyID: keyID, at: Self.time, audit: nil) == 1)
        let note = AuditNote<Void>(at: Self.time, actor: "ana", action: .deviceUnblock, target: "k", workspaceID: nil) { _ in "" }
        #expect(try world.store.unblockDevice(keyID: keyID, at: Self.time + 1, audit: note) == .unblocked)
        #expect(try world.store.device(keyID: keyID)?.status == .active)
        #expect(try world.store.activeToken(hash: world.token(1, keySeed: 1).tokenHash, at: Self.time) == nil)
        #expect(try world.store.auditPage(AuditQuery(workspaceID: nil, actions: [.deviceUnblock])).entries.map(\.entry.actor) == ["ana"])
        #expect(try world.store.unblockDevice(keyID: [UInt8](repeating: 77, count: 32), at: Self.time, audit: nil) == .notFound)
        _ = try world.store.revokeIntegration(clientID: "clid_contract", at: Self.time, audit: nil)
        #expect(try world.store.unblockDevice(keyID: keyID, at: Self.time, audit: nil) == .integrationRevoked)
        #expect(try world.store.device(keyID: keyID)?.status == .revoked)
    }

    @Test("a token of a device blocked by other means (a row edited by hand) is not active", arguments: StoreBackend.available)
    func tokenChecksItsDevice(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        let hash = world.token(1, keySeed: 1).tokenHash
        #expect(try world.store.activeToken(hash: hash, at: Self.time) != nil)
        // The device row alone is changed; its token row stays.
        switch world.location.location {
        case .sqlite(let path):
            let database = try SQLiteDatabase(path: path)
            try database.immediateTransaction { try database.execute("UPDATE devices SET status = 'revoked'") }
        case .postgresql(let settings):
            try PostgresConnection(settings).execute("UPDATE devices SET status = 'revoked'")
        }
        #expect(try world.store.activeToken(hash: hash, at: Self.time) == nil)
    }

    @Test("a refresh keeping the latest N leaves the device exactly its newest N tokens", arguments: StoreBackend.available)
    func keepLatest(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        let keyID = world.device(1).keyID
        for step in UInt8(1)...4 {
            var token = world.token(10 + step, keySeed: 1)
            token.issuedAt = Self.time + Int64(step)
            let outcome = try world.store.advanceCounter(
                keyID: keyID, from: UInt32(step - 1), to: UInt32(step), at: Self.time + Int64(step), token: token,
                consumingChallenge: try world.challenge(20 + step), keepingLatest: 2)
            #expect(outcome == .advanced)
        }
        let live = try (UInt8(11)...14).filter {
            try world.store.activeToken(hash: world.token($0, keySeed: 1).tokenHash, at: Self.time) != nil
        }
        #expect(live == [13, 14])
        #expect(try world.store.activeToken(hash: world.token(1, keySeed: 1).tokenHash, at: Self.time) == nil)
    }

    @Test(
        "two refreshes in the same second with a cap of 1: the token just minted survives, whatever its hash",
        arguments: StoreBackend.available)
    func keepLatestWithinOneSecond(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        let keyID = world.device(1).keyID
        // The older token's hash sorts above the newer one's: a tie on issued_at broken by the
        // hash alone would keep the older token.
        for (step, seed) in [(UInt32(1), UInt8(0xF0)), (2, 0x20)] {
            let outcome = try world.store.advanceCounter(
                keyID: keyID, from: step - 1, to: step, at: Self.time, token: world.token(seed, keySeed: 1),
                consumingChallenge: try world.challenge(UInt8(40 + step)), keepingLatest: 1)
            #expect(outcome == .advanced)
            #expect(try world.store.activeToken(hash: world.token(seed, keySeed: 1).tokenHash, at: Self.time) != nil)
        }
        #expect(try world.store.activeToken(hash: world.token(0xF0, keySeed: 1).tokenHash, at: Self.time) == nil)
        #expect(try world.store.liveTokenCount(keyID: keyID, at: Self.time) == 1)
    }

    @Test("the audit log lists every entry newest first, a page at a time, and filters", arguments: StoreBackend.available)
    func auditLog(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let revoke = AuditNote<RevocationSummary>(
            at: Self.time, actor: "alice (attestctl)", action: .integrationRevoke, target: "clid_contract"
        ) { "\($0.tokensRevoked) tokens" }
        let tokenNote = AuditNote<Bool>(at: Self.time + 5, actor: "bob (attestctl)", action: .tokenRevoke, target: "ab") { _ in "" }
        _ = try world.store.revokeIntegration(clientID: "clid_contract", at: Self.time, audit: revoke)
        _ = try world.otherNode().revokeToken(hash: [0xAB], audit: tokenNote)
        let first = AuditEntry(
            at: Self.time, actor: "alice (attestctl)", action: .integrationRevoke, target: "clid_contract", detail: "0 tokens")
        let second = AuditEntry(at: Self.time + 5, actor: "bob (attestctl)", action: .tokenRevoke, target: "ab", detail: "")
        func entries(_ query: AuditQuery) throws -> [AuditEntry] { try world.store.auditPage(query).entries.map(\.entry) }
        #expect(try entries(AuditQuery(workspaceID: nil)) == [second, first])
        #expect(try entries(AuditQuery(workspaceID: nil, from: Self.time + 1)) == [second])
        #expect(try entries(AuditQuery(workspaceID: nil, to: Self.time + 4)) == [first])
        #expect(try entries(AuditQuery(workspaceID: nil, actions: [.tokenRevoke, .deviceBlock])) == [second])
        #expect(try entries(AuditQuery(workspaceID: nil, actor: "alice")) == [first])
        #expect(try entries(AuditQuery(workspaceID: nil, target: "clid_")) == [first])
        // LIKE's wildcards are matched as themselves.
        #expect(try entries(AuditQuery(workspaceID: nil, actor: "%")).isEmpty)
        #expect(try entries(AuditQuery(workspaceID: nil, target: "_")).isEmpty)
        // One row a page: the first page says where the second starts, and the second is the last.
        let page = try world.store.auditPage(AuditQuery(workspaceID: nil, limit: 1))
        #expect(page.entries.map(\.entry) == [second])
        let next = try #require(page.next)
        let last = try world.store.auditPage(AuditQuery(workspaceID: nil, limit: 1, before: next))
        #expect(last.entries.map(\.entry) == [first] && last.next == nil)
    }

    @Test(
        "a change and its audit row are one transaction: no row for a change that failed or found nothing",
        arguments: StoreBackend.available)
    func auditInTransaction(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let note = AuditNote<Void>(at: Self.time, actor: "alice", action: .integrationCreate, target: "clid_contract") { _ in "again" }
        // A duplicate client ID fails on its constraint: neither the integration nor the row stays.
        #expect(throws: StorageError.self) { try world.store.insertIntegration(world.integration, audit: note) }
        let missing = AuditNote<Int>(at: Self.time, actor: "alice", action: .deviceBlock, target: "00") { "\($0) tokens revoked" }
        #expect(try world.store.blockDevice(keyID: [UInt8](repeating: 0, count: 32), at: Self.time, audit: missing) == nil)
        let unchanged = AuditNote<Bool>(at: Self.time, actor: "gateway", action: .tokenRevoke, target: "00") { $0 ? "revoked" : nil }
        #expect(try world.store.revokeToken(hash: [0], audit: unchanged) == false)
        #expect(try world.store.auditPage(AuditQuery(workspaceID: nil)).entries.isEmpty)
    }
}
