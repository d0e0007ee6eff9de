import AttestStorage
import AttestTesting
import Testing

/// An admin key's lifecycle on both stores: an expired or disabled key is found neither by its
/// hash nor through a session, disabling ends its sessions, enabling brings the key back (not
/// its sessions), revocation wins over both, and a use is written at most once a minute.
@Suite("Admin key lifecycle")
struct AdminKeyLifecycleTests {
    static let time = AdminKeyStoreTests.time

    static func session(_ byte: UInt8, of key: AdminKeyRecord) -> AdminSessionRecord {
        AdminSessionRecord(sessionHash: [UInt8](repeating: byte, count: 32), keyID: key.id, createdAt: time, expiresAt: time + 3600)
    }

    @Test("a key is refused from its expiry on, by its hash and through its sessions", arguments: StoreBackend.available)
    func expiry(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.time)
        var key = AdminKeyStoreTests.key("admk_e", 1)
        key.expiresAt = Self.time + 100
        try store.insertAdminKey(key, audit: nil)
        let session = Self.session(7, of: key)
        try store.insertAdminSession(session, keepingLatest: 10, audit: nil)
        #expect(try store.activeAdminKey(hash: key.keyHash, at: Self.time + 99)?.id == key.id)
        #expect(try store.adminSessionKey(hash: session.sessionHash, at: Self.time + 99)?.id == key.id)
        #expect(try store.activeAdminKey(hash: key.keyHash, at: Self.time + 100) == nil)
        #expect(try store.adminSessionKey(hash: session.sessionHash, at: Self.time + 100) == nil)
        #expect(try store.adminKey(id: key.id)?.status(at: Self.time + 100) == .expired)
        withExtendedLifetime(location) {}
    }

    @Test(
        "disable refuses the key and ends its sessions; enable brings the key back but not its sessions; revoked stays revoked",
        arguments: StoreBackend.available)
    func disableAndEnable(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.time)
        let key = AdminKeyStoreTests.key("admk_d", 2)
        try store.insertAdminKey(key, audit: nil)
        let session = Self.session(8, of: key)
        try store.insertAdminSession(session, keepingLatest: 10, audit: nil)
        let note = AuditNote<Bool>(at: Self.time + 1, actor: "Ops", action: .adminKeyDisable, target: key.id) { $0 ? "disabled" : nil }
        #expect(try store.disableAdminKey(id: key.id, at: Self.time + 1, audit: note) == true)
        #expect(try store.disableAdminKey(id: key.id, at: Self.time + 2, audit: nil) == false)
        #expect(try store.disableAdminKey(id: "admk_unknown", at: Self.time + 2, audit: nil) == nil)
        #expect(try store.activeAdminKey(hash: key.keyHash, at: Self.time + 2) == nil)
        #expect(try store.adminKey(id: key.id)?.disabledAt == Self.time + 1)
        #expect(try store.adminKey(id: key.id)?.status(at: Self.time + 2) == .disabled)
        #expect(try !store.deleteAdminSession(hash: session.sessionHash))
        let rows = try store.auditPage(AuditQuery(workspaceID: nil, actions: [.adminKeyDisable])).entries
        #expect(rows.map(\.entry.target) == [key.id])

        #expect(try store.disableAdminKey(id: key.id, at: nil, audit: nil) == true)
        #expect(try store.disableAdminKey(id: key.id, at: nil, audit: nil) == false)
        #expect(try store.activeAdminKey(hash: key.keyHash, at: Self.time + 3)?.id == key.id)
        #expect(try store.adminSessionKey(hash: session.sessionHash, at: Self.time + 3) == nil)

        #expect(try store.revokeAdminKey(id: key.id, at: Self.time + 4, audit: nil) == true)
        #expect(try store.disableAdminKey(id: key.id, at: Self.time + 5, audit: nil) == false)
        #expect(try store.disableAdminKey(id: key.id, at: nil, audit: nil) == false)
        #expect(try store.activeAdminKey(hash: key.keyHash, at: Self.time + 5) == nil)
        withExtendedLifetime(location) {}
    }

    @Test("a key's use is written at most once a minute", arguments: StoreBackend.available)
    func lastUse(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.time)
        let key = AdminKeyStoreTests.key("admk_u", 3)
        try store.insertAdminKey(key, audit: nil)
        #expect(try store.adminKey(id: key.id)?.lastUsedAt == nil)
        try store.noteAdminKeyUse(id: key.id, at: Self.time + 10)
        #expect(try store.adminKey(id: key.id)?.lastUsedAt == Self.time + 10)
        try store.noteAdminKeyUse(id: key.id, at: Self.time + 69)
        #expect(try store.adminKey(id: key.id)?.lastUsedAt == Self.time + 10)
        try store.noteAdminKeyUse(id: key.id, at: Self.time + 70)
        #expect(try store.adminKey(id: key.id)?.lastUsedAt == Self.time + 70)
        withExtendedLifetime(location) {}
    }
}
