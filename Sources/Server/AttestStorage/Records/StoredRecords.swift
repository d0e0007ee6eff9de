import AttestCore

/// A record the stores read back: its columns, in order, and the initialiser that reads them
/// (GRDB's `FetchableRecord.init(row:)`), used by both backends.
package protocol DecodableRecord: Sendable {
    /// The columns `init(row:)` reads, in its order.
    static var columns: [String] { get }
    /// Reads the record from the reader's next columns.
    init(row: inout SQLRowReader) throws(StorageError)
}

/// A record the stores also write: the values it binds for its `columns`, in their order. The
/// column list, the bound values and the decoder sit together in one declaration per record,
/// and the contract suite round-trips every column through both stores.
package protocol StoredRecord: DecodableRecord {
    /// One value per column of `columns`, in order.
    var storedValues: [SQLValue] { get }
}

extension DecodableRecord {
    /// The record of a whole row: every column must be read.
    package init(decoding row: SQLRow) throws(StorageError) {
        var reader = SQLRowReader(row)
        try self.init(row: &reader)
        try reader.finish()
    }
}

extension TokenRecord: StoredRecord {
    package static let columns = [
        "token_hash", "client_id", "workspace_id", "key_id", "scope", "issued_at", "expires_at", "debug_token_id",
    ]

    package var storedValues: [SQLValue] {
        [
            .blob(tokenHash), .text(clientID), .text(workspaceID), .blob(keyID), .text(scope), .integer(issuedAt), .integer(expiresAt),
            SQLValue(debugTokenID),
        ]
    }

    package init(row: inout SQLRowReader) throws(StorageError) {
        self.init(
            tokenHash: try row.blob(), clientID: try row.text(), workspaceID: try row.text(), keyID: try row.blob(),
            scope: try row.text(), issuedAt: try row.int64(), expiresAt: try row.int64(), debugTokenID: try row.optionalText())
    }
}

extension ReceiptState {
    /// The six receipt columns of a device (NULL together when the device has no receipt state).
    static let columns = [
        "receipt_verdict", "receipt_type", "receipt_created_at", "receipt_expires_at", "risk_metric", "receipt_refreshed_at",
    ]

    /// In the order of `columns`; all NULL for none.
    static func storedValues(_ state: ReceiptState?) -> [SQLValue] {
        guard let state else { return Array(repeating: .null, count: columns.count) }
        return [
            .text(state.verdict.description), SQLValue(state.type?.rawValue), SQLValue(state.createdAt), SQLValue(state.expiresAt),
            SQLValue(state.riskMetric.map(Int64.init)), SQLValue(state.refreshedAt),
        ]
    }

    /// The receipt state in the reader's next six columns; nil (and the columns skipped) when the
    /// verdict is NULL.
    static func read(_ row: inout SQLRowReader) throws(StorageError) -> ReceiptState? {
        guard !(try row.nextIsNull()) else {
            row.skip(columns.count)
            return nil
        }
        return ReceiptState(
            verdict: ReceiptVerdict(try row.text()), type: try row.optionalEnumeration(ReceiptType.self),
            createdAt: try row.optionalInt64(),
            expiresAt: try row.optionalInt64(), riskMetric: try row.optionalInteger(Int.self), refreshedAt: try row.optionalInt64())
    }
}

extension DeviceRecord: StoredRecord {
    package static let columns =
        [
            "key_id", "client_id", "public_key", "counter", "environment", "receipt", "status", "created_at", "updated_at",
            "trust_anchor", "app_id",
        ] + ReceiptState.columns + ["credential_sha256"]

    package var storedValues: [SQLValue] {
        [
            .blob(keyID), .text(clientID), .blob(publicKey), .integer(Int64(counter)), .text(environment.rawValue), .blob(receipt),
            .text(status.rawValue), .integer(createdAt), .integer(updatedAt), .text(trustAnchor), SQLValue(appID),
        ] + ReceiptState.storedValues(receiptState) + [credentialSHA256.map { .blob($0) } ?? .null]
    }

    package init(row: inout SQLRowReader) throws(StorageError) {
        self.init(
            keyID: try row.blob(), clientID: try row.text(), publicKey: try row.blob(), counter: try row.integer(UInt32.self),
            environment: try row.enumeration(AppAttestEnvironment.self), receipt: try row.blob(),
            status: try row.enumeration(DeviceStatus.self),
            createdAt: try row.int64(), updatedAt: try row.int64(), trustAnchor: try row.text(), appID: try row.optionalText(),
            receiptState: try ReceiptState.read(&row), credentialSHA256: try row.optionalBlob())
    }
}

extension IntegrationRecord: StoredRecord {
    /// The columns of the `integrations` row. Its bundle IDs are rows of `integration_bundle_ids`,
    /// which a select adds as one more column (`bundleIDsColumn`) that `init(row:)` reads last.
    package static let columns = [
        "client_id", "workspace_id", "name", "team_id", "status", "allowed_environments", "created_at", "revoked_at", "suspended_at",
        "max_live_tokens_per_device", "require_valid_receipt", "max_risk_metric", "max_new_keys_per_hour",
    ]

    package var storedValues: [SQLValue] {
        [
            .text(clientID), .text(workspaceID), .text(name), .text(teamID), .text(status.rawValue),
            .text(environments.map(\.rawValue).sorted().joined(separator: ",")), .integer(createdAt), SQLValue(revokedAt),
            SQLValue(suspendedAt),
            SQLValue(maxLiveTokensPerDevice.map(Int64.init)), .integer(policy.requireValidReceipt ? 1 : 0),
            SQLValue(policy.maxRiskMetric.map(Int64.init)), SQLValue(policy.maxNewKeysPerHour.map(Int64.init)),
        ]
    }

    package init(row: inout SQLRowReader) throws(StorageError) {
        let clientID = try row.text()
        let workspaceID = try row.text()
        let name = try row.text()
        let teamID = try row.text()
        let status = try row.enumeration(IntegrationStatus.self)
        let column = row.position
        var environments: [AppAttestEnvironment] = []
        for name in try row.text().split(separator: ",") {
            guard let environment = AppAttestEnvironment(rawValue: String(name)) else {
                throw .statementFailed("column \(column) names an environment attestd does not know")
            }
            environments.append(environment)
        }
        let createdAt = try row.int64()
        let revokedAt = try row.optionalInt64()
        let suspendedAt = try row.optionalInt64()
        let maxLiveTokens = try row.optionalInteger(Int.self)
        let requireValidReceipt = try row.integer(Int.self)
        guard requireValidReceipt == 0 || requireValidReceipt == 1 else {
            throw .statementFailed("require_valid_receipt holds neither 0 nor 1")
        }
        let policy = IntegrationPolicy(
            requireValidReceipt: requireValidReceipt == 1, maxRiskMetric: try row.optionalInteger(Int.self),
            maxNewKeysPerHour: try row.optionalInteger(Int.self))
        // Bundle IDs never contain a comma (`AppID.isValidBundleID`); sorted here, whatever order
        // the aggregate gave.
        let bundleIDs = (try row.optionalText() ?? "").split(separator: ",").map(String.init).sorted()
        self.init(
            clientID: clientID, workspaceID: workspaceID, name: name, teamID: teamID, bundleIDs: bundleIDs, environments: environments,
            status: status, createdAt: createdAt, revokedAt: revokedAt, suspendedAt: suspendedAt, maxLiveTokensPerDevice: maxLiveTokens,
            policy: policy)
    }

    /// A select of integrations (columns, then the bundle IDs as one comma-separated column)
    /// `filter`ed (a `WHERE ...`/`ORDER BY ...` tail with `?` placeholders).
    static func select(_ filter: String, forPostgreSQL suffix: String = "") -> SQLStatement {
        let columns = SQLText.list(Self.columns)
        let sqlite =
            "SELECT \(columns), (SELECT group_concat(b.bundle_id, ',') FROM integration_bundle_ids b "
            + "WHERE b.client_id = integrations.client_id) FROM integrations \(filter)"
        let postgresql =
            "SELECT \(columns), (SELECT string_agg(b.bundle_id, ',' ORDER BY b.bundle_id) FROM integration_bundle_ids b "
            + "WHERE b.client_id = integrations.client_id) FROM integrations \(filter)"
        return SQLStatement(
            sqlite: SQLText.issueOrder(in: sqlite, for: .sqlite),
            postgresql: SQLText.issueOrder(in: SQLStatement.numbered(postgresql), for: .postgresql) + suffix)
    }
}

extension ChallengeState: DecodableRecord {
    package static let columns = ["client_id", "expires_at", "consumed_at"]

    package init(row: inout SQLRowReader) throws(StorageError) {
        self.init(clientID: try row.text(), expiresAt: try row.int64(), consumed: try row.optionalInt64() != nil)
    }
}

extension AuditEntry: StoredRecord {
    package static let columns = ["at", "actor", "action", "target", "detail", "workspace_id"]

    package var storedValues: [SQLValue] {
        [.integer(at), .text(actor), .text(action.rawValue), .text(target), .text(detail), SQLValue(workspaceID)]
    }

    package init(row: inout SQLRowReader) throws(StorageError) {
        self.init(
            at: try row.int64(), actor: try row.text(), action: try row.enumeration(AuditAction.self), target: try row.text(),
            detail: try row.text(), workspaceID: try row.optionalText())
    }
}

extension SQLValue {
    /// Text, or NULL for nil.
    init(_ text: String?) { self = text.map { .text($0) } ?? .null }
    /// A whole number, or NULL for nil.
    init(_ number: Int64?) { self = number.map { .integer($0) } ?? .null }
}

extension StoreStatistics {
    /// The statistics query's one row: both dialects select active integrations, active devices,
    /// revoked and suspended integrations and the database's bytes, in that order; `extraBytes`
    /// are bytes the database does not count itself (SQLite's WAL).
    init(row: SQLRow?, extraBytes: Int64 = 0) throws(StorageError) {
        guard let row else { throw .statementFailed("the statistics answered no row") }
        self.init(
            activeIntegrations: Int(try row.int64(0)), activeDevices: Int(try row.int64(1)), revokedIntegrations: Int(try row.int64(2)),
            suspendedIntegrations: Int(try row.int64(3)), bytes: try row.int64(4) + extraBytes)
    }
}
