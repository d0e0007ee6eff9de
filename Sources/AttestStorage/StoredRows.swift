/// The columns of the stored records and the values bound for them, written once for both stores:
/// their SQL differs only in placeholders (`?` for SQLite, `$n` for PostgreSQL) and in reading
/// rows back.
enum StoredRows {
    static let tokenColumns = "token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at"

    static let deviceColumns =
        "key_id, client_id, public_key, counter, environment, receipt, status, created_at, updated_at, trust_anchor, app_id, "
        + "receipt_verdict, receipt_type, receipt_created_at, receipt_expires_at, risk_metric, receipt_refreshed_at"

    /// The columns an INSERT of an integration fills (its bundle IDs are rows of their own).
    static let integrationInsertColumns =
        "client_id, workspace_id, name, team_id, status, allowed_environments, created_at, revoked_at, suspended_at, "
        + "max_live_tokens_per_device, require_valid_receipt, max_risk_metric, max_new_keys_per_hour"

    /// In the order of `tokenColumns`.
    static func values(_ token: TokenRecord) -> [SQLValue] {
        [
            .blob(token.tokenHash), .text(token.clientID), .text(token.workspaceID), .blob(token.keyID), .text(token.scope),
            .integer(token.issuedAt), .integer(token.expiresAt),
        ]
    }

    /// In the order of `deviceColumns`.
    static func values(_ device: DeviceRecord) -> [SQLValue] {
        [
            .blob(device.keyID), .text(device.clientID), .blob(device.publicKey), .integer(Int64(device.counter)),
            .text(device.environment), .blob(device.receipt), .text(device.status.rawValue), .integer(device.createdAt),
            .integer(device.updatedAt), .text(device.trustAnchor), device.appID.map { .text($0) } ?? .null,
        ] + values(device.receiptState)
    }

    /// The six receipt columns (`receipt_verdict` to `receipt_refreshed_at`); all NULL for none.
    static func values(_ state: ReceiptState?) -> [SQLValue] {
        guard let state else { return [.null, .null, .null, .null, .null, .null] }
        return [
            .text(state.verdict), state.type.map { .text($0) } ?? .null, state.createdAt.map { .integer($0) } ?? .null,
            state.expiresAt.map { .integer($0) } ?? .null, state.riskMetric.map { .integer(Int64($0)) } ?? .null,
            state.refreshedAt.map { .integer($0) } ?? .null,
        ]
    }

    /// In the order of `integrationInsertColumns`.
    static func values(_ integration: IntegrationRecord) -> [SQLValue] {
        [
            .text(integration.clientID), .text(integration.workspaceID), .text(integration.name), .text(integration.teamID),
            .text(integration.status.rawValue), .text(integration.environments.sorted().joined(separator: ",")),
            .integer(integration.createdAt), integration.revokedAt.map { .integer($0) } ?? .null,
            integration.suspendedAt.map { .integer($0) } ?? .null,
            integration.maxLiveTokensPerDevice.map { .integer(Int64($0)) } ?? .null,
            .integer(integration.policy.requireValidReceipt ? 1 : 0),
            integration.policy.maxRiskMetric.map { .integer(Int64($0)) } ?? .null,
            integration.policy.maxNewKeysPerHour.map { .integer(Int64($0)) } ?? .null,
        ]
    }

    /// `?, ?, ...`: SQLite's placeholders for `count` values.
    static func sqlitePlaceholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    /// `$1, $2, ...`: PostgreSQL's placeholders for `count` values.
    static func postgresPlaceholders(_ count: Int) -> String {
        (1...count).map { "$\($0)" }.joined(separator: ", ")
    }
}
