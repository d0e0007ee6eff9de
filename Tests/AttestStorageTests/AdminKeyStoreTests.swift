import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// The admin keys and console sessions on both stores: lookups by hash skip revoked keys, a
/// session dies with its expiry, its sign-out and its key's revocation, and a workspace reads
/// only its own integrations and audit rows.
@Suite("Admin key store")
struct AdminKeyStoreTests {
    static let time: Int64 = 1_800_000_000

    static func key(_ id: String, _ byte: UInt8, workspace: String = "ws_a", role: AdminRole = .owner) -> AdminKeyRecord {
        AdminKeyRecord(
            id: id, keyHash: [UInt8](repeating: byte, count: 32), workspaceID: workspace, role: role, name: "key \(id)", createdAt: time)
    }

    static func integration(_ clientID: String, workspace: String) -> IntegrationRecord {
        IntegrationRecord(
            clientID: clientID, workspaceID: workspace, name: clientID, teamID: "ABCDE12345", bundleIDs: ["com.example.a"],
            environments: [.production], status: .active, createdAt: time, revokedAt: nil)
    }

    @Test(
        "a live key's name is unique in its workspace, racing creations included; a revoked key's name, or another workspace's, is free",
        arguments: StoreBackend.available)
    func uniqueLiveNames(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let stores = try (0..<4).map { _ in try location.open(at: Self.time) }
        let named: @Sendable (String, UInt8, String) -> AdminKeyRecord = { id, byte, workspace in
            var key = Self.key(id, byte, workspace: workspace)
            key.name = "Dana"
            return key
        }
        let inserted = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            if (try? stores[index % 4].insertAdminKey(named("admk_r\(index)", UInt8(10 + index), "ws_a"), audit: nil)) != nil {
                inserted.withLock { $0 += 1 }
            }
        }
        #expect(inserted.withLock { $0 } == 1)
        #expect(throws: StorageError.self) { try stores[0].insertAdminKey(named("admk_x", 30, "ws_a"), audit: nil) }
        try stores[0].insertAdminKey(named("admk_other", 31, "ws_b"), audit: nil)
        let live = try #require(try stores[0].adminKeys(workspaceID: "ws_a").first)
        #expect(try stores[0].revokeAdminKey(id: live.id, at: Self.time, audit: nil) == true)
        try stores[0].insertAdminKey(named("admk_again", 32, "ws_a"), audit: nil)
    }

    @Test("a revoked key is not found by its hash, and its sessions end with it", arguments: StoreBackend.available)
    func revokedKey(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.time)
        let key = Self.key("admk_1", 1)
        try store.insertAdminKey(key, audit: nil)
        #expect(try store.activeAdminKey(hash: key.keyHash, at: Self.time) == key)
        #expect(try store.activeAdminKey(hash: [UInt8](repeating: 2, count: 32), at: Self.time) == nil)
        let session = AdminSessionRecord(
            sessionHash: [UInt8](repeating: 9, count: 32), keyID: key.id, createdAt: Self.time, expiresAt: Self.time + 60)
        try store.insertAdminSession(session, keepingLatest: 10, audit: nil)
        #expect(try store.adminSessionKey(hash: session.sessionHash, at: Self.time) == key)
        #expect(try store.revokeAdminKey(id: key.id, at: Self.time + 1, audit: nil) == true)
        #expect(try store.revokeAdminKey(id: key.id, at: Self.time + 2, audit: nil) == false)
        #expect(try store.revokeAdminKey(id: "admk_unknown", at: Self.time + 2, audit: nil) == nil)
        #expect(try store.activeAdminKey(hash: key.keyHash, at: Self.time) == nil)
        #expect(try store.adminSessionKey(hash: session.sessionHash, at: Self.time) == nil)
        #expect(try store.adminKey(id: key.id)?.revokedAt == Self.time + 1)
        // The revocation deleted the key's session rows too.
        #expect(try !store.deleteAdminSession(hash: session.sessionHash))
        withExtendedLifetime(location) {}
    }

    @Test(
        "a session row whose key is revoked is dead even if the row survived (the lookup checks the key)", arguments: StoreBackend.available
    )
    func sessionOfRevokedKeyRow(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.time)
        // A revoked key whose session row is still there (as a copy or an older attestd could leave).
        var key = Self.key("admk_r", 3)
        key.revokedAt = Self.time
        try store.insertAdminKey(key, audit: nil)
        let session = AdminSessionRecord(
            sessionHash: [UInt8](repeating: 8, count: 32), keyID: key.id, createdAt: Self.time, expiresAt: Self.time + 60)
        try store.insertAdminSession(session, keepingLatest: 10, audit: nil)
        #expect(try store.adminSessionKey(hash: session.sessionHash, at: Self.time) == nil)
        withExtendedLifetime(location) {}
    }

    @Test(
        "a key keeps its newest sessions only; a session's expiry moves forward, never back; sign-ins' audit rows go after 90 days",
        arguments: StoreBackend.available)
    func sessionBounds(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.time)
        let key = Self.key("admk_1", 1)
        try store.insertAdminKey(key, audit: nil)
        func session(_ byte: UInt8, at time: Int64) -> AdminSessionRecord {
            AdminSessionRecord(sessionHash: [UInt8](repeating: byte, count: 32), keyID: key.id, createdAt: time, expiresAt: time + 1800)
        }
        for byte in UInt8(1)...3 {
            #expect(try store.insertAdminSession(session(byte, at: Self.time + Int64(byte)), keepingLatest: 3, audit: nil) == 0)
        }
        let signIn = AuditNote<Int>(at: Self.time, actor: "k", action: .consoleSignIn, target: key.id, workspaceID: "ws_a") { _ in "" }
        #expect(try store.insertAdminSession(session(4, at: Self.time + 4), keepingLatest: 3, audit: signIn) == 1)
        #expect(try store.adminSessions(keyID: key.id, at: Self.time).map { $0.sessionHash[0] } == [4, 3, 2])
        try store.extendAdminSession(hash: session(4, at: 0).sessionHash, to: Self.time + 4 + 3600)
        try store.extendAdminSession(hash: session(4, at: 0).sessionHash, to: Self.time + 10)
        #expect(try store.liveAdminSession(hash: session(4, at: 0).sessionHash, at: Self.time)?.session.expiresAt == Self.time + 4 + 3600)
        #expect(try store.deleteAdminSessions(keyID: key.id, keeping: session(4, at: 0).sessionHash) == 2)
        // The sign-in's row, and another action's, 90 days and a second later.
        let create = AuditNote<Void>(at: Self.time, actor: "k", action: .adminKeyCreate, target: "admk_2", workspaceID: "ws_a") { _ in "" }
        try store.insertAdminKey(Self.key("admk_2", 2), audit: create)
        _ = try store.purgeExpired(at: Self.time + AuditQuery.signInRetention)
        #expect(try store.auditPage(AuditQuery(workspaceID: nil)).entries.count == 2)
        _ = try store.purgeExpired(at: Self.time + AuditQuery.signInRetention + 1)
        #expect(try store.auditPage(AuditQuery(workspaceID: nil)).entries.map(\.entry.action) == [.adminKeyCreate])
        withExtendedLifetime(location) {}
    }

    @Test("a session ends at its expiry and at sign-out; the purge removes expired ones", arguments: StoreBackend.available)
    func sessionLifetime(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.time)
        let key = Self.key("admk_1", 1)
        try store.insertAdminKey(key, audit: nil)
        let first = AdminSessionRecord(
            sessionHash: [UInt8](repeating: 3, count: 32), keyID: key.id, createdAt: Self.time, expiresAt: Self.time + 60)
        let second = AdminSessionRecord(
            sessionHash: [UInt8](repeating: 4, count: 32), keyID: key.id, createdAt: Self.time, expiresAt: Self.time + 600)
        try store.insertAdminSession(first, keepingLatest: 10, audit: nil)
        try store.insertAdminSession(second, keepingLatest: 10, audit: nil)
        #expect(try store.adminSessionKey(hash: first.sessionHash, at: Self.time + 59) == key)
        #expect(try store.adminSessionKey(hash: first.sessionHash, at: Self.time + 60) == nil)
        _ = try store.purgeExpired(at: Self.time + 60)
        #expect(try store.adminSessionKey(hash: first.sessionHash, at: Self.time) == nil)
        #expect(try store.deleteAdminSession(hash: second.sessionHash))
        #expect(try store.adminSessionKey(hash: second.sessionHash, at: Self.time) == nil)
        #expect(try !store.deleteAdminSession(hash: second.sessionHash))
        withExtendedLifetime(location) {}
    }

    @Test("a workspace reads its own integrations, keys and audit rows only", arguments: StoreBackend.available)
    func workspaceScope(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.time)
        try store.insertIntegration(Self.integration("clid_a", workspace: "ws_a"), audit: nil)
        try store.insertIntegration(Self.integration("clid_b", workspace: "ws_b"), audit: nil)
        try store.insertAdminKey(Self.key("admk_a", 1), audit: nil)
        try store.insertAdminKey(Self.key("admk_b", 2, workspace: "ws_b"), audit: nil)
        #expect(try store.integrations(workspaceID: "ws_a").map(\.clientID) == ["clid_a"])
        #expect(try store.adminKeys(workspaceID: "ws_b").map(\.id) == ["admk_b"])
        // An attestctl row about clid_a (no workspace), a row written in ws_a, one in ws_b.
        let revokeA = AuditNote<RevocationSummary>(at: Self.time, actor: "alice (attestctl)", action: .integrationRevoke, target: "clid_a")
        {
            _ in "done"
        }
        _ = try store.revokeIntegration(clientID: "clid_a", at: Self.time, audit: revokeA)
        let suspendB = AuditNote<Bool>(
            at: Self.time + 1, actor: "key b", action: .integrationSuspend, target: "clid_b", workspaceID: "ws_b"
        ) { _ in "" }
        _ = try store.setSuspended(clientID: "clid_b", at: Self.time + 1, audit: suspendB)
        let keyA = AuditNote<Void>(at: Self.time + 2, actor: "key a", action: .adminKeyCreate, target: "admk_x", workspaceID: "ws_a") {
            _ in "role user"
        }
        try store.insertAdminKey(Self.key("admk_x", 5, role: .user), audit: keyA)
        let seenByA = try store.auditPage(AuditQuery(workspaceID: "ws_a")).entries.map(\.entry)
        #expect(seenByA.map(\.target) == ["admk_x", "clid_a"])
        #expect(try store.auditPage(AuditQuery(workspaceID: "ws_b")).entries.map(\.entry.actor) == ["key b"])
        withExtendedLifetime(location) {}
    }
}
