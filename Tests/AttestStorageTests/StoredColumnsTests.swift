import AttestStorage
import AttestTesting
import Testing

/// Every column of every stored record, written and read back through each store, through the
/// one-row statements and the batched copy alike: a column list, a bound value or a decoder that
/// disagrees with the others fails here.
@Suite("Stored columns")
struct StoredColumnsTests {
    static let time: Int64 = 1_800_000_000

    /// An integration with every optional column set.
    static let full = IntegrationRecord(
        clientID: "clid_full", workspaceID: "ws_full", name: "Full \u{e9}t\u{e9}", teamID: "ABCDE12345",
        bundleIDs: ["com.example.a", "com.example.b"], environments: [.development, .production], status: .active, createdAt: time,
        revokedAt: nil, suspendedAt: time + 1, maxLiveTokensPerDevice: 3,
        policy: IntegrationPolicy(requireValidReceipt: true, maxRiskMetric: 7, maxNewKeysPerHour: 9))
    /// A revoked integration with every optional column empty.
    static let bare = IntegrationRecord(
        clientID: "clid_bare", workspaceID: "ws_bare", name: "Bare", teamID: "ZYXWV98765", bundleIDs: ["org.example.only"],
        environments: [.production], status: .revoked, createdAt: time - 10, revokedAt: time - 5)

    static let device = DeviceRecord(
        keyID: [UInt8](repeating: 7, count: 32), clientID: "clid_full", publicKey: [0x04] + [UInt8](repeating: 9, count: 64),
        counter: UInt32.max, environment: .development, receipt: [0, 1, 2, 255], status: .revoked, createdAt: time, updatedAt: time + 2,
        trustAnchor: String(repeating: "cd", count: 32), appID: "ABCDE12345.com.example.a",
        receiptState: ReceiptState(
            verdict: .valid, type: .receipt, createdAt: time - 100, expiresAt: time + 100, riskMetric: 42, refreshedAt: time + 3),
        credentialSHA256: [UInt8](repeating: 0xC5, count: 32))
    static let deviceWithoutReceipt = DeviceRecord(
        keyID: [UInt8](repeating: 8, count: 32), clientID: "clid_full", publicKey: [0x04] + [UInt8](repeating: 1, count: 64), counter: 0,
        environment: .production, receipt: [], status: .active, createdAt: time + 1, updatedAt: time + 1)
    static let token = TokenRecord(
        tokenHash: [UInt8](repeating: 3, count: 32), clientID: "clid_full", workspaceID: "ws_full", keyID: [UInt8](repeating: 8, count: 32),
        scope: "messages", issuedAt: time, expiresAt: time + 3600)
    static let audit = AuditEntry(at: time, actor: "alice (attestctl)", action: .integrationUpdate, target: "clid_full", detail: "a \"b\"")
    static let workspaceAudit = AuditEntry(
        at: time + 1, actor: "Ops key", action: .adminKeyCreate, target: "admk_0011223344556677", detail: "role owner",
        workspaceID: "ws_full")
    static let adminKey = AdminKeyRecord(
        id: "admk_0011223344556677", keyHash: [UInt8](repeating: 5, count: 32), workspaceID: "ws_full", role: .primaryOwner,
        name: "Ops key \u{e9}", createdAt: time)
    static let revokedAdminKey = AdminKeyRecord(
        id: "admk_8899aabbccddeeff", keyHash: [UInt8](repeating: 6, count: 32), workspaceID: "ws_bare", role: .developer, name: "Old",
        createdAt: time - 1, revokedAt: time)

    @Test("each record reads back exactly as written", arguments: StoreBackend.available)
    func roundTrip(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.time)
        for integration in [Self.full, Self.bare] {
            try store.insertIntegration(integration, audit: nil)
            #expect(try store.integration(clientID: integration.clientID) == integration)
        }
        for key in [Self.adminKey, Self.revokedAdminKey] {
            try store.insertAdminKey(key, audit: nil)
            #expect(try store.adminKey(id: key.id) == key)
        }
        let snapshot = StoreSnapshot(
            integrations: [], devices: [Self.device, Self.deviceWithoutReceipt], tokens: [Self.token],
            auditEntries: [Self.audit, Self.workspaceAudit], adminKeys: [Self.revokedAdminKey, Self.adminKey])
        let copyLocation = try TestStoreLocation(backend)
        let copy = try copyLocation.open(at: Self.time)
        try copy.restore(
            StoreSnapshot(
                integrations: [Self.bare, Self.full], devices: snapshot.devices, tokens: snapshot.tokens,
                auditEntries: snapshot.auditEntries, adminKeys: snapshot.adminKeys))
        #expect(try copy.device(keyID: Self.device.keyID) == Self.device)
        #expect(try copy.device(keyID: Self.deviceWithoutReceipt.keyID) == Self.deviceWithoutReceipt)
        #expect(try copy.auditPage(AuditQuery(workspaceID: nil)).entries.map(\.entry) == [Self.workspaceAudit, Self.audit])
        #expect(try copy.adminKeys(workspaceID: nil) == [Self.revokedAdminKey, Self.adminKey])
        let back = try copy.snapshot(at: Self.time)
        #expect(back.integrations == [Self.bare, Self.full])
        #expect(back.devices == [Self.device, Self.deviceWithoutReceipt])
        #expect(back.tokens == [Self.token])
        #expect(back.auditEntries == [Self.audit, Self.workspaceAudit])
        #expect(back.adminKeys == [Self.revokedAdminKey, Self.adminKey])
        withExtendedLifetime((location, copyLocation)) {}
    }

    @Test("a row whose column holds the wrong type or NULL is refused, not read as empty")
    func typedColumns() throws {
        let row = SQLRow([.text("x"), .null, .integer(5), .blob([1])])
        #expect(throws: StorageError.self) { try row.int64(0) }
        #expect(throws: StorageError.self) { try row.text(1) }
        #expect(throws: StorageError.self) { try row.blob(2) }
        #expect(throws: StorageError.self) { try row.text(4) }
        #expect(try row.optionalText(1) == nil)
        #expect(try row.double(2) == 5)
        var short = SQLRowReader(SQLRow(Array(TokenRecord.columns.dropLast().map { _ in SQLValue.null })))
        #expect(throws: StorageError.self) { try TokenRecord(row: &short) }
        // A decoder that reads fewer columns than the statement selected is refused too.
        let long = SQLRow(Self.token.storedValues + [.integer(1)])
        #expect(throws: StorageError.self) { try TokenRecord(decoding: long) }
        #expect(try TokenRecord(decoding: SQLRow(Self.token.storedValues)) == Self.token)
    }
}
