import AttestStorage
import AttestTesting
import Foundation
import Testing

/// The `DebugTokenStore` contract, on every backend.
@Suite("Debug token store")
struct DebugTokenStoreTests {
    typealias World = TokenStoreContractTests.World
    static let time = TokenStoreContractTests.time

    static func debugToken(_ seed: UInt8, _ world: World, expiresIn: Int64 = 3600) -> DebugTokenRecord {
        DebugTokenRecord(
            id: "dbgt_\(seed)", secretHash: [UInt8](repeating: seed, count: 32), keyID: [UInt8](repeating: 0x80 | seed, count: 32),
            clientID: world.integration.clientID, name: "token \(seed)", createdBy: "alice (attestctl)", createdAt: time,
            expiresAt: time + expiresIn)
    }

    static func accessToken(_ seed: UInt8, for debug: DebugTokenRecord, _ world: World) -> TokenRecord {
        var token = world.token(seed, keySeed: 0)
        token.keyID = debug.keyID
        token.debugTokenID = debug.id
        return token
    }

    @Test(
        "stored and read back; minting counts its use; a revocation on another node deletes what it minted, kept answers too",
        arguments: StoreBackend.available)
    func lifecycle(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let debug = Self.debugToken(1, world)
        let note = AuditNote<Void>(at: Self.time, actor: "alice", action: .debugTokenCreate, target: debug.id) { _ in "made" }
        #expect(try world.store.insertDebugToken(debug, liveLimit: 20, audit: note) == .inserted)
        #expect(try world.store.debugToken(secretHash: debug.secretHash) == debug)
        #expect(try world.store.mintForDebugToken(Self.accessToken(50, for: debug, world), at: Self.time + 5) == .minted)
        #expect(try world.store.mintForDebugToken(Self.accessToken(51, for: debug, world), at: Self.time + 6) == .minted)
        let read = try #require(try world.store.debugToken(id: debug.id))
        #expect(read.minted == 2 && read.lastUsedAt == Self.time + 6)
        // Found (and, on PostgreSQL, kept in memory under the answer lease) by this node first.
        let found = try #require(try world.store.activeToken(hash: world.token(50, keySeed: 0).tokenHash, at: Self.time))
        #expect(found.debugTokenID == debug.id)
        let revoke = AuditNote<DebugTokenRevocation>(at: Self.time, actor: "alice", action: .debugTokenRevoke, target: debug.id) { _ in "x"
        }
        #expect(try world.otherNode().revokeDebugToken(id: debug.id, at: Self.time + 7, audit: revoke) == .revoked(tokens: 2))
        #expect(try world.store.activeToken(hash: world.token(50, keySeed: 0).tokenHash, at: Self.time) == nil)
        #expect(try world.store.revokeDebugToken(id: debug.id, at: Self.time + 8, audit: nil) == .alreadyRevoked)
        #expect(try world.store.revokeDebugToken(id: "dbgt_missing", at: Self.time, audit: nil) == nil)
        #expect(try world.store.mintForDebugToken(Self.accessToken(52, for: debug, world), at: Self.time + 9) == .invalid)
        #expect(
            try world.store.auditPage(AuditQuery(workspaceID: nil)).entries.map(\.entry.action) == [.debugTokenRevoke, .debugTokenCreate])
    }

    @Test("an expired debug token, another integration's, or one whose key differs mints nothing", arguments: StoreBackend.available)
    func refusals(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let debug = Self.debugToken(2, world, expiresIn: 60)
        #expect(try world.store.insertDebugToken(debug, liveLimit: 20, audit: nil) == .inserted)
        #expect(try world.store.mintForDebugToken(Self.accessToken(60, for: debug, world), at: Self.time + 60) == .invalid)
        var foreign = Self.accessToken(61, for: debug, world)
        foreign.clientID = "clid_other"
        try world.store.insertIntegration(World.integration("clid_other"), audit: nil)
        #expect(try world.store.mintForDebugToken(foreign, at: Self.time) == .invalid)
        var otherKey = Self.accessToken(62, for: debug, world)
        otherKey.keyID = [UInt8](repeating: 9, count: 32)
        #expect(try world.store.mintForDebugToken(otherKey, at: Self.time) == .invalid)
        #expect(try world.store.debugToken(id: debug.id)?.minted == 0)
    }

    @Test(
        "at most the live limit per integration; a suspended or revoked integration gets none and mints none",
        arguments: StoreBackend.available)
    func limitsAndIntegrationState(_ backend: StoreBackend) throws {
        let world = try World(backend)
        for seed in UInt8(10)..<13 {
            #expect(try world.store.insertDebugToken(Self.debugToken(seed, world), liveLimit: 3, audit: nil) == .inserted)
        }
        #expect(try world.store.insertDebugToken(Self.debugToken(13, world), liveLimit: 3, audit: nil) == .limitReached)
        #expect(try world.store.revokeDebugToken(id: "dbgt_10", at: Self.time, audit: nil) == .revoked(tokens: 0))
        #expect(try world.store.insertDebugToken(Self.debugToken(13, world), liveLimit: 3, audit: nil) == .inserted)
        #expect(
            try world.store.debugTokens(clientID: world.integration.clientID).map(\.id) == ["dbgt_10", "dbgt_11", "dbgt_12", "dbgt_13"])
        _ = try world.store.setSuspended(clientID: world.integration.clientID, at: Self.time, audit: nil)
        let debug = Self.debugToken(11, world)
        #expect(try world.store.mintForDebugToken(Self.accessToken(70, for: debug, world), at: Self.time) == .integrationSuspended)
        #expect(try world.store.insertDebugToken(Self.debugToken(14, world), liveLimit: 30, audit: nil) == .integrationInactive)
        _ = try world.store.revokeIntegration(clientID: world.integration.clientID, at: Self.time, audit: nil)
        #expect(try world.store.mintForDebugToken(Self.accessToken(71, for: debug, world), at: Self.time) == .integrationRevoked)
    }
}
