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

/// The ownership offer on both stores: one open offer per workspace, accepted only by its key,
/// before it expires, while its giver is the live primary owner; the roles swap in one step.
@Suite("Ownership offers")
struct OwnershipOfferStoreTests {
    static let time = AdminKeyStoreTests.time

    @Test(
        "accepted only by its key, unexpired, from the live primary owner; the roles swap and the offer goes",
        arguments: StoreBackend.available)
    func accept(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.time)
        let giver = AdminKeyStoreTests.key("admk_p", 1, role: .primaryOwner)
        let taker = AdminKeyStoreTests.key("admk_t", 2, role: .user)
        let other = AdminKeyStoreTests.key("admk_o", 3, role: .owner)
        for key in [giver, taker, other] { try store.insertAdminKey(key, audit: nil) }
        let offer = OwnershipOffer(
            workspaceID: "ws_a", fromKeyID: giver.id, toKeyID: taker.id, createdAt: Self.time, expiresAt: Self.time + 100)
        try store.offerOwnership(offer, audit: nil)
        #expect(try store.ownershipOffer(workspaceID: "ws_a") == offer)
        #expect(try !store.acceptOwnership(workspaceID: "ws_a", keyID: other.id, at: Self.time + 1, audit: nil))
        #expect(try !store.acceptOwnership(workspaceID: "ws_a", keyID: taker.id, at: Self.time + 100, audit: nil))
        // A giver disabled meanwhile is no longer the live primary owner: nothing changes.
        #expect(try store.disableAdminKey(id: giver.id, at: Self.time + 2, audit: nil) == true)
        #expect(try !store.acceptOwnership(workspaceID: "ws_a", keyID: taker.id, at: Self.time + 3, audit: nil))
        #expect(try store.disableAdminKey(id: giver.id, at: nil, audit: nil) == true)
        let note = AuditNote<Void>(at: Self.time + 4, actor: "Taker", action: .ownershipTransfer, target: taker.id) { _ in "accepted" }
        #expect(try store.acceptOwnership(workspaceID: "ws_a", keyID: taker.id, at: Self.time + 4, audit: note))
        #expect(try store.adminKey(id: taker.id)?.role == .primaryOwner && store.adminKey(id: giver.id)?.role == .owner)
        #expect(try store.ownershipOffer(workspaceID: "ws_a") == nil)
        #expect(try !store.acceptOwnership(workspaceID: "ws_a", keyID: taker.id, at: Self.time + 5, audit: nil))
        let rows = try store.auditPage(AuditQuery(workspaceID: nil, actions: [.ownershipTransfer])).entries
        #expect(rows.map(\.entry.target) == [taker.id])
        // A new offer replaces the open one; withdrawing it leaves none.
        try store.offerOwnership(
            OwnershipOffer(
                workspaceID: "ws_a", fromKeyID: taker.id, toKeyID: giver.id, createdAt: Self.time + 6, expiresAt: Self.time + 99),
            audit: nil)
        try store.offerOwnership(
            OwnershipOffer(
                workspaceID: "ws_a", fromKeyID: taker.id, toKeyID: other.id, createdAt: Self.time + 7, expiresAt: Self.time + 99),
            audit: nil)
        #expect(try store.ownershipOffer(workspaceID: "ws_a")?.toKeyID == other.id)
        #expect(try store.withdrawOwnershipOffer(workspaceID: "ws_a", audit: nil))
        #expect(try !store.withdrawOwnershipOffer(workspaceID: "ws_a", audit: nil))
        withExtendedLifetime(location) {}
    }
}
