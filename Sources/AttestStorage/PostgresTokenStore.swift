/// The PostgreSQL `TokenStore`, for several attestd nodes on one database.
///
/// Every state change is one transaction at READ COMMITTED, and every decision that two nodes
/// could race on is a compare-and-set the database arbitrates: `UPDATE ... WHERE consumed_at IS
/// NULL` (PostgreSQL re-checks the condition on the newest row version after waiting for a
/// concurrent writer, so exactly one of two racers changes the row), `UPDATE ... WHERE counter = $n`,
/// and `INSERT ... ON CONFLICT DO NOTHING` for a key ID. Transactions that read an integration's
/// status lock that row `FOR KEY SHARE` before anything else, so they serialise with a revocation
/// (which locks it `FOR UPDATE` first) and never deadlock with it. A deadlock or serialization failure is
/// retried; nothing is cached between requests, so a change committed by another node or by
/// `attestctl` is seen by the next request.
///
/// Round trips are the cost on this path, so the hot ones take one each: a single statement runs
/// as its own transaction (`write`), a refresh reads its integration, challenge and device in one
/// statement and commits in one (`refreshStatement`), and token lookups that arrive together
/// share one statement (`PostgresStatementGroups`).
package final class PostgresTokenStore: TokenStore {
    private let pool: PostgresPool
    /// Every authorize and introspect: lookups that arrive together share one statement.
    private let lookups: PostgresStatementGroups<TokenLookup, TokenRecord?>

    /// One token lookup: the hash, and the caller's time that decides expiry.
    struct TokenLookup: Sendable {
        var hash: [UInt8]
        var time: Int64
    }

    /// The connection settings (the URI may hold a password: log `settings.redactedURI`).
    package var settings: PostgresSettings { pool.settings }

    /// Connects, then applies the embedded migrations under the advisory lock. Throws
    /// `unavailable` when the server cannot be reached, `migrationUnknown` when a newer binary
    /// migrated the database: the caller must refuse to start.
    package convenience init(settings: PostgresSettings, migrateAt time: Int64) throws(StorageError) {
        self.init(unconnected: settings)
        try migrate(at: time)
    }

    /// Applies the migrations the database lacks, under the advisory lock.
    @discardableResult
    package func migrate(at time: Int64) throws(StorageError) -> [Migration] {
        try pool.withConnection { connection throws(StorageError) in try PostgresMigrator().migrate(connection, at: time) }
    }

    /// Opens the store without migrating (attestctl): `schemaBehind` or `migrationUnknown` when
    /// the schema is not exactly this binary's; `unavailable` when the server does not answer.
    package convenience init(existing settings: PostgresSettings) throws(StorageError) {
        self.init(unconnected: settings)
        try pool.withConnection { connection throws(StorageError) in try PostgresMigrator().requireCurrent(connection) }
    }

    /// Makes the store without connecting: the first call connects (tests of an unreachable server).
    package init(unconnected settings: PostgresSettings) {
        let pool = PostgresPool(settings: settings)
        self.pool = pool
        // One lookup statement in flight at a time: the lookups that arrive meanwhile join the
        // next, so the groups grow with the load instead of the statements, and the other
        // connections stay free for challenges, refreshes and registrations.
        lookups = PostgresStatementGroups { requests throws(StorageError) in
            let hashes = Array(Set(requests.map(\.hash)))
            let rows = try pool.withConnection { connection throws(StorageError) in
                try connection.query(Self.selectActiveTokens, [PostgresArrays.bytea(hashes), .integer(requests.map(\.time).min() ?? 0)])
            }
            return Self.answers(to: requests, among: (0..<rows.count).map { Self.token(rows, $0) })
        }
    }

    /// Each lookup's answer from the rows of a grouped statement run at the earliest caller's time:
    /// each caller's own time decides expiry, as if it had been looked up alone.
    static func answers(to requests: [TokenLookup], among tokens: [TokenRecord]) -> [TokenRecord?] {
        let byHash = Dictionary(tokens.map { ($0.tokenHash, $0) }, uniquingKeysWith: { first, _ in first })
        return requests.map { request in byHash[request.hash].flatMap { $0.expiresAt > request.time ? $0 : nil } }
    }

    /// The ids of the applied migrations.
    package func appliedMigrationIDs() throws(StorageError) -> [Int] {
        try pool.withConnection { connection throws(StorageError) in try PostgresMigrator().appliedMigrationIDs(connection) }
    }

    /// Closes idle pooled connections (tests that restart the server).
    package func closeIdleConnections() { pool.closeIdleConnections() }

    // MARK: Plumbing

    /// How many times a transaction that lost to a deadlock or serialization failure runs again.
    private static let conflictRetries = 5

    /// Runs `body` in one transaction; retried on `conflict`, rolled back on any failure.
    @discardableResult
    private func transaction<T>(
        isolation: String = "READ COMMITTED", _ body: (PostgresConnection) throws(StorageError) -> T
    ) throws(StorageError) -> T {
        try retryingConflicts { () throws(StorageError) -> T in
            try pool.withConnection { connection throws(StorageError) -> T in
                try connection.execute("BEGIN ISOLATION LEVEL \(isolation)")
                do throws(StorageError) {
                    let value = try body(connection)
                    try connection.execute("COMMIT")
                    return value
                } catch {
                    if connection.isHealthy { try? connection.execute("ROLLBACK") }
                    throw error
                }
            }
        }
    }

    /// Runs `work` (one transaction) again when it lost to a deadlock or serialization failure.
    private func retryingConflicts<T>(_ work: () throws(StorageError) -> T) throws(StorageError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            do throws(StorageError) {
                return try work()
            } catch  where error.code == .conflict && attempt <= Self.conflictRetries {
                continue
            }
        }
    }

    /// Runs one read outside a transaction (autocommit sees the last committed state).
    private func read<T>(_ body: (PostgresConnection) throws(StorageError) -> T) throws(StorageError) -> T {
        try pool.withConnection(body)
    }

    /// Runs one writing statement as its own transaction (autocommit): one round trip where
    /// BEGIN and COMMIT around it would cost three. Retried on `conflict` like a transaction.
    @discardableResult
    private func write<T>(_ body: (PostgresConnection) throws(StorageError) -> T) throws(StorageError) -> T {
        try retryingConflicts { () throws(StorageError) -> T in try pool.withConnection(body) }
    }

    package func setSuspended(clientID: String, at time: Int64?) throws(StorageError) -> Bool? {
        try transaction { connection throws(StorageError) -> Bool? in
            let rows = try connection.query("SELECT status FROM integrations WHERE client_id = $1 FOR UPDATE", [.text(clientID)])
            guard rows.count == 1 else { return nil }
            guard rows.string(0, 0) == "active" else { return false }
            try connection.query(
                "UPDATE integrations SET suspended_at = $1 WHERE client_id = $2", [time.map { .integer($0) } ?? .null, .text(clientID)])
            return true
        }
    }

    package func revokeToken(hash: [UInt8]) throws(StorageError) -> Bool {
        try write { connection throws(StorageError) -> Bool in
            try connection.query("DELETE FROM tokens WHERE token_hash = $1", [.blob(hash)]).changed == 1
        }
    }

    package func blockDevice(keyID: [UInt8], at time: Int64) throws(StorageError) -> Int? {
        try transaction { connection throws(StorageError) -> Int? in
            guard
                try connection.query(
                    "UPDATE devices SET status = 'revoked', updated_at = $1 WHERE key_id = $2", [.integer(time), .blob(keyID)]
                ).changed == 1
            else { return nil }
            return try connection.query("DELETE FROM tokens WHERE key_id = $1", [.blob(keyID)]).changed
        }
    }

    package func updatePolicy(clientID: String, policy: IntegrationPolicy, maxLiveTokensPerDevice: Int?) throws(StorageError) -> Bool? {
        try write { connection throws(StorageError) -> Bool? in
            let changed = try connection.query(
                """
                UPDATE integrations SET require_valid_receipt = $1, max_risk_metric = $2, max_new_keys_per_hour = $3,
                    max_live_tokens_per_device = $4 WHERE client_id = $5
                """,
                [
                    .integer(policy.requireValidReceipt ? 1 : 0), policy.maxRiskMetric.map { .integer(Int64($0)) } ?? .null,
                    policy.maxNewKeysPerHour.map { .integer(Int64($0)) } ?? .null,
                    maxLiveTokensPerDevice.map { .integer(Int64($0)) } ?? .null,
                    .text(clientID),
                ]
            ).changed
            return changed == 1 ? true : nil
        }
    }

    package func deviceSummaries(clientID: String, at time: Int64) throws(StorageError) -> [DeviceSummary] {
        try transaction(isolation: "REPEATABLE READ") { connection throws(StorageError) -> [DeviceSummary] in
            let devices = try connection.query(
                "SELECT \(StoredRows.deviceColumns) FROM devices WHERE client_id = $1 ORDER BY created_at, key_id", [.text(clientID)])
            let counts = try connection.query(
                "SELECT key_id, count(*) FROM tokens WHERE client_id = $1 AND expires_at > $2 GROUP BY key_id",
                [.text(clientID), .integer(time)])
            var byKey: [[UInt8]: Int] = [:]
            for row in 0..<counts.count { byKey[counts.bytes(row, 0) ?? []] = Int(counts.int64(row, 1)) }
            return (0..<devices.count).map {
                let device = Self.device(devices, $0)
                return DeviceSummary(device: device, liveTokens: byKey[device.keyID] ?? 0)
            }
        }
    }

    package func liveTokenCount(keyID: [UInt8], at time: Int64) throws(StorageError) -> Int {
        try read { connection throws(StorageError) -> Int in
            Int(
                try connection.query("SELECT count(*) FROM tokens WHERE key_id = $1 AND expires_at > $2", [.blob(keyID), .integer(time)])
                    .int64(0, 0))
        }
    }

    package func newKeyCount(clientID: String, since: Int64) throws(StorageError) -> Int {
        try read { connection throws(StorageError) -> Int in
            Int(
                try connection.query(
                    "SELECT count(*) FROM devices WHERE client_id = $1 AND created_at >= $2", [.text(clientID), .integer(since)]
                ).int64(0, 0))
        }
    }

    package func updateReceipt(keyID: [UInt8], receipt: [UInt8], state: ReceiptState) throws(StorageError) {
        try write { connection throws(StorageError) in
            try connection.query(
                """
                UPDATE devices SET receipt = $1, receipt_verdict = $2, receipt_type = $3, receipt_created_at = $4, receipt_expires_at = $5,
                    risk_metric = $6, receipt_refreshed_at = $7 WHERE key_id = $8
                """, [.blob(receipt)] + StoredRows.values(state) + [.blob(keyID)])
        }
    }

    package func touchReceipt(keyID: [UInt8], at time: Int64) throws(StorageError) {
        try write { connection throws(StorageError) in
            try connection.query("UPDATE devices SET receipt_refreshed_at = $1 WHERE key_id = $2", [.integer(time), .blob(keyID)])
        }
    }

    package func setFraudKey(clientID: String, keyID: String, sealedKey: [UInt8], at time: Int64) throws(StorageError) -> Bool? {
        try transaction { connection throws(StorageError) -> Bool? in
            guard try connection.query("SELECT 1 FROM integrations WHERE client_id = $1", [.text(clientID)]).count == 1 else { return nil }
            try connection.query(
                """
                INSERT INTO fraud_keys (client_id, key_id, sealed_key, created_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (client_id) DO UPDATE SET key_id = excluded.key_id, sealed_key = excluded.sealed_key, created_at = excluded.created_at
                """, [.text(clientID), .text(keyID), .blob(sealedKey), .integer(time)])
            return true
        }
    }

    package func fraudKey(clientID: String) throws(StorageError) -> (keyID: String, sealedKey: [UInt8])? {
        try read { connection throws(StorageError) -> (keyID: String, sealedKey: [UInt8])? in
            let rows = try connection.query("SELECT key_id, sealed_key FROM fraud_keys WHERE client_id = $1", [.text(clientID)])
            return rows.count == 1 ? (keyID: rows.string(0, 0) ?? "", sealedKey: rows.bytes(0, 1) ?? []) : nil
        }
    }

    package func receiptRefreshCandidates(dueBefore: Int64, limit: Int) throws(StorageError) -> [DeviceRecord] {
        try read { connection throws(StorageError) -> [DeviceRecord] in
            let rows = try connection.query(
                """
                SELECT \(StoredRows.deviceColumns.split(separator: ",").map { "d." + $0.filter { $0 != " " } }.joined(separator: ", "))
                FROM devices d JOIN integrations i ON i.client_id = d.client_id JOIN fraud_keys f ON f.client_id = d.client_id
                WHERE d.status = 'active' AND i.status = 'active' AND i.suspended_at IS NULL
                    AND coalesce(d.receipt_refreshed_at, d.created_at) <= $1
                ORDER BY coalesce(d.receipt_refreshed_at, d.created_at) LIMIT $2
                """, [.integer(dueBefore), .integer(Int64(limit))])
            return (0..<rows.count).map { Self.device(rows, $0) }
        }
    }

    package func appendAudit(_ entry: AuditEntry) throws(StorageError) {
        try write { connection throws(StorageError) in
            try connection.query(
                "INSERT INTO audit_log (at, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5)",
                [.integer(entry.at), .text(entry.actor), .text(entry.action), .text(entry.target), .text(entry.detail)])
        }
    }

    package func auditLog(since: Int64, limit: Int) throws(StorageError) -> [AuditEntry] {
        try read { connection throws(StorageError) -> [AuditEntry] in
            let rows = try connection.query(
                "SELECT at, actor, action, target, detail FROM audit_log WHERE at >= $1 ORDER BY id LIMIT $2",
                [.integer(since), .integer(Int64(limit))])
            return (0..<rows.count).map {
                AuditEntry(
                    at: rows.int64($0, 0), actor: rows.string($0, 1) ?? "", action: rows.string($0, 2) ?? "",
                    target: rows.string($0, 3) ?? "",
                    detail: rows.string($0, 4) ?? "")
            }
        }
    }

    package func snapshot(at time: Int64) throws(StorageError) -> StoreSnapshot {
        // REPEATABLE READ: the three reads see one state.
        try transaction(isolation: "REPEATABLE READ") { connection throws(StorageError) -> StoreSnapshot in
            let ids = try connection.query("SELECT client_id FROM integrations ORDER BY created_at, client_id")
            var integrations: [IntegrationRecord] = []
            for row in 0..<ids.count {
                if let record = try Self.loadIntegration(connection, clientID: ids.string(row, 0) ?? "") { integrations.append(record) }
            }
            let devices = try connection.query("SELECT \(StoredRows.deviceColumns) FROM devices ORDER BY created_at, key_id")
            let tokens = try connection.query(
                "SELECT \(StoredRows.tokenColumns) FROM tokens WHERE expires_at > $1 ORDER BY issued_at, token_hash", [.integer(time)])
            return StoreSnapshot(
                integrations: integrations, devices: (0..<devices.count).map { Self.device(devices, $0) },
                tokens: (0..<tokens.count).map { Self.token(tokens, $0) })
        }
    }

    /// Rows per multi-row INSERT when restoring (9 columns x 500 stays far under 65,535 parameters).
    private static let restoreBatch = 500

    package func restore(_ snapshot: StoreSnapshot) throws(StorageError) {
        try transaction { connection throws(StorageError) in
            // Locks out a concurrent restore (and any writer of integrations) until this commits.
            try connection.execute("LOCK TABLE integrations IN EXCLUSIVE MODE")
            let existing = try connection.query("SELECT count(*) FROM integrations").int64(0, 0)
            guard existing == 0 else { throw .notEmpty("the target database holds \(existing) integrations already") }
            for integration in snapshot.integrations { try Self.insert(integration, into: connection) }
            try Self.insertBatches(
                connection, table: "devices", columns: StoredRows.deviceColumns, rows: snapshot.devices.map(StoredRows.values))
            try Self.insertBatches(
                connection, table: "tokens", columns: StoredRows.tokenColumns, rows: snapshot.tokens.map(StoredRows.values))
        }
    }

    /// Inserts `rows` with one multi-row INSERT per batch.
    private static func insertBatches(
        _ connection: PostgresConnection, table: String, columns: String, rows: [[SQLValue]]
    ) throws(StorageError) {
        var start = 0
        while start < rows.count {
            let batch = rows[start..<min(rows.count, start + restoreBatch)]
            var placeholders: [String] = []
            var parameter = 0
            for row in batch {
                placeholders.append(
                    "("
                        + row.indices.map { _ in
                            parameter += 1; return "$\(parameter)"
                        }.joined(separator: ", ") + ")")
            }
            try connection.query("INSERT INTO \(table) (\(columns)) VALUES " + placeholders.joined(separator: ", "), batch.flatMap { $0 })
            start += batch.count
        }
    }

    package func takeSharedToken(bucket: String, perSecond: Double, burst: Double, at now: Double) throws(StorageError) -> Int? {
        try transaction { connection throws(StorageError) -> Int? in
            // The row exists before it is locked, so two nodes' first takes serialise on it too.
            try connection.query(
                "INSERT INTO rate_buckets (bucket, tokens, updated_at) VALUES ($1, $2, $3) ON CONFLICT (bucket) DO NOTHING",
                [.text(bucket), .real(burst), .real(now)])
            let rows = try connection.query("SELECT tokens, updated_at FROM rate_buckets WHERE bucket = $1 FOR UPDATE", [.text(bucket)])
            var state = TokenBucket(tokens: rows.double(0, 0), updatedAt: rows.double(0, 1))
            let wait = state.take(perSecond: perSecond, burst: burst, now: now)
            try connection.query(
                "UPDATE rate_buckets SET tokens = $2, updated_at = $3 WHERE bucket = $1",
                [.text(bucket), .real(state.tokens), .real(state.updatedAt)])
            return wait
        }
    }

    package func close() throws(StorageError) { pool.closeIdleConnections() }

    package func checkIntegrity() throws(StorageError) { try checkAvailable() }

    /// Checks that the server answers (`/readyz`).
    package func checkAvailable() throws(StorageError) {
        try read { connection throws(StorageError) in _ = try connection.query("SELECT 1") }
    }

    private static let integrationColumns =
        "client_id, workspace_id, name, team_id, allowed_environments, status, created_at, revoked_at, suspended_at, "
        + "max_live_tokens_per_device::bigint, require_valid_receipt::bigint, max_risk_metric::bigint, max_new_keys_per_hour::bigint"

    /// The integration and its bundle IDs in one statement (one round trip, one snapshot: no
    /// transaction needed). Bundle IDs never contain a comma (`AppID.isValidBundleID`).
    private static let selectIntegration =
        "SELECT \(integrationColumns), (SELECT string_agg(b.bundle_id, ',' ORDER BY b.bundle_id) FROM integration_bundle_ids b "
        + "WHERE b.client_id = integrations.client_id) FROM integrations WHERE client_id = $1"

    private static func loadIntegration(_ connection: PostgresConnection, clientID: String) throws(StorageError) -> IntegrationRecord? {
        let rows = try connection.query(selectIntegration, [.text(clientID)])
        return rows.count == 1 ? integration(rows) : nil
    }

    /// The integration in the first row, its 14 columns as `selectIntegration` puts them; nil when they are NULL.
    private static func integration(_ rows: PostgresRows) -> IntegrationRecord? {
        guard !rows.isNull(0, 0) else { return nil }
        return IntegrationRecord(
            clientID: rows.string(0, 0) ?? "", workspaceID: rows.string(0, 1) ?? "", name: rows.string(0, 2) ?? "",
            teamID: rows.string(0, 3) ?? "", bundleIDs: (rows.string(0, 13) ?? "").split(separator: ",").map(String.init),
            environments: (rows.string(0, 4) ?? "").split(separator: ",").map(String.init),
            status: IntegrationStatus(rawValue: rows.string(0, 5) ?? "") ?? .revoked, createdAt: rows.int64(0, 6),
            revokedAt: rows.isNull(0, 7) ? nil : rows.int64(0, 7), suspendedAt: rows.isNull(0, 8) ? nil : rows.int64(0, 8),
            maxLiveTokensPerDevice: rows.isNull(0, 9) ? nil : Int(rows.int64(0, 9)),
            policy: IntegrationPolicy(
                requireValidReceipt: rows.int64(0, 10) == 1, maxRiskMetric: rows.isNull(0, 11) ? nil : Int(rows.int64(0, 11)),
                maxNewKeysPerHour: rows.isNull(0, 12) ? nil : Int(rows.int64(0, 12))))
    }

    /// Locks the integration's row against a concurrent revocation or suspension and says what it is.
    private static func lockState(_ connection: PostgresConnection, clientID: String) throws(StorageError) -> IntegrationState {
        let rows = try connection.query(
            "SELECT status, suspended_at FROM integrations WHERE client_id = $1 FOR KEY SHARE", [.text(clientID)])
        return rows.count == 1 ? IntegrationState(status: rows.string(0, 0), suspended: !rows.isNull(0, 1)) : .missing
    }

    private static func consume(_ id: [UInt8], at time: Int64, in connection: PostgresConnection) throws(StorageError) -> Bool {
        try connection.query(
            "UPDATE challenges SET consumed_at = $1 WHERE id = $2 AND consumed_at IS NULL", [.integer(time), .blob(id)]
        ).changed == 1
    }

    private static func token(_ rows: PostgresRows, _ row: Int) -> TokenRecord {
        TokenRecord(
            tokenHash: rows.bytes(row, 0) ?? [], clientID: rows.string(row, 1) ?? "", workspaceID: rows.string(row, 2) ?? "",
            keyID: rows.bytes(row, 3) ?? [], scope: rows.string(row, 4) ?? "", issuedAt: rows.int64(row, 5), expiresAt: rows.int64(row, 6))
    }

    /// Built once: prepared statements are cached by their text, and these run at every refresh and attestation.
    private static let insertToken = "INSERT INTO tokens (\(StoredRows.tokenColumns)) VALUES (\(StoredRows.postgresPlaceholders(7)))"
    private static let insertDevice =
        "INSERT INTO devices (\(StoredRows.deviceColumns)) VALUES (\(StoredRows.postgresPlaceholders(17))) ON CONFLICT (key_id) DO NOTHING"

    private static func insert(_ token: TokenRecord, into connection: PostgresConnection) throws(StorageError) {
        try connection.query(insertToken, StoredRows.values(token))
    }

    // MARK: Integrations

    private static func insert(_ integration: IntegrationRecord, into connection: PostgresConnection) throws(StorageError) {
        let values = StoredRows.values(integration)
        try connection.query(
            "INSERT INTO integrations (\(StoredRows.integrationInsertColumns)) VALUES (\(StoredRows.postgresPlaceholders(values.count)))",
            values)
        for bundleID in integration.bundleIDs {
            try connection.query(
                "INSERT INTO integration_bundle_ids (client_id, bundle_id) VALUES ($1, $2)", [.text(integration.clientID), .text(bundleID)])
        }
    }

    package func insertIntegration(_ integration: IntegrationRecord) throws(StorageError) {
        try transaction { connection throws(StorageError) in try Self.insert(integration, into: connection) }
    }

    package func integration(clientID: String) throws(StorageError) -> IntegrationRecord? {
        try read { connection throws(StorageError) in try Self.loadIntegration(connection, clientID: clientID) }
    }

    package func integrations() throws(StorageError) -> [IntegrationRecord] {
        try transaction { connection throws(StorageError) in
            let ids = try connection.query("SELECT client_id FROM integrations ORDER BY created_at, client_id")
            var result: [IntegrationRecord] = []
            for row in 0..<ids.count {
                if let record = try Self.loadIntegration(connection, clientID: ids.string(row, 0) ?? "") { result.append(record) }
            }
            return result
        }
    }

    package func revokeIntegration(clientID: String, at time: Int64) throws(StorageError) -> RevocationSummary? {
        try transaction { connection throws(StorageError) -> RevocationSummary? in
            // Locks the row first: waits for transactions holding it FOR KEY SHARE, and makes any
            // later one wait for this commit and then see 'revoked'.
            let found = try connection.query("SELECT status FROM integrations WHERE client_id = $1 FOR UPDATE", [.text(clientID)])
            guard found.count == 1 else { return nil }
            let changed =
                try connection.query(
                    "UPDATE integrations SET status = 'revoked', revoked_at = $1 WHERE client_id = $2 AND status = 'active'",
                    [.integer(time), .text(clientID)]
                ).changed == 1
            let tokens = try connection.query(
                "DELETE FROM tokens WHERE client_id = $1 AND expires_at > $2", [.text(clientID), .integer(time)]
            ).changed
            // Expired tokens are inert already; remove them too so nothing of the integration lingers.
            try connection.query("DELETE FROM tokens WHERE client_id = $1", [.text(clientID)])
            let devices = try connection.query(
                "UPDATE devices SET status = 'revoked', updated_at = $1 WHERE client_id = $2 AND status = 'active'",
                [.integer(time), .text(clientID)]
            ).changed
            try connection.query("DELETE FROM challenges WHERE client_id = $1", [.text(clientID)])
            return RevocationSummary(changed: changed, tokensRevoked: tokens, devicesBlocked: devices)
        }
    }

    // MARK: Challenges

    package func insertChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool {
        try write { connection throws(StorageError) -> Bool in
            try connection.query(Self.insertChallengeForActive, [.blob(id), .text(clientID), .integer(createdAt), .integer(expiresAt)])
                .changed == 1
        }
    }

    /// Inserts challenge `$1` of `$2` (created `$3`, expiring `$4`) when that integration is
    /// active. The integration is read, not locked: since migration 0007 the table has no foreign
    /// key, whose row lock on the integration was WAL-logged and so made every challenge's commit
    /// wait for a flush. Integrations are never deleted, so the read guards as well as the key did.
    private static let insertChallengeForActive = """
        INSERT INTO challenges (id, client_id, created_at, expires_at)
        SELECT $1, client_id, $3, $4 FROM integrations WHERE client_id = $2 AND status = 'active' AND suspended_at IS NULL
        """

    package func replaceChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool {
        try transaction { connection throws(StorageError) -> Bool in
            try connection.query("DELETE FROM challenges WHERE id = $1", [.blob(id)])
            return try connection.query(
                Self.insertChallengeForActive, [.blob(id), .text(clientID), .integer(createdAt), .integer(expiresAt)]
            ).changed == 1
        }
    }

    package func challenge(id: [UInt8]) throws(StorageError) -> ChallengeState? {
        try read { connection throws(StorageError) -> ChallengeState? in
            Self.challenge(try connection.query("SELECT client_id, expires_at, consumed_at FROM challenges WHERE id = $1", [.blob(id)]))
        }
    }

    /// The challenge in the first row (client_id, expires_at, consumed_at); nil when there is none.
    private static func challenge(_ rows: PostgresRows) -> ChallengeState? {
        guard rows.count == 1, !rows.isNull(0, 0) else { return nil }
        return ChallengeState(clientID: rows.string(0, 0) ?? "", expiresAt: rows.int64(0, 1), consumed: !rows.isNull(0, 2))
    }

    package func consumeChallenge(id: [UInt8], at time: Int64) throws(StorageError) -> Bool {
        try write { connection throws(StorageError) -> Bool in try Self.consume(id, at: time, in: connection) }
    }

    // MARK: Devices and tokens

    package func registerDevice(
        _ device: DeviceRecord, firstToken: TokenRecord, consumingChallenge challengeID: [UInt8], at time: Int64
    ) throws(StorageError) -> RegistrationOutcome {
        try transaction { connection throws(StorageError) -> RegistrationOutcome in
            let state = try Self.lockState(connection, clientID: device.clientID)
            guard try Self.consume(challengeID, at: time, in: connection) else { return .challengeUsed }
            switch state {
            case .active: break
            case .suspended: return .integrationSuspended
            case .revoked, .missing: return .integrationRevoked
            }
            // A concurrent registration of the same key waits on the unique index and then
            // inserts nothing: the loser sees keyExists, never a constraint error.
            let inserted =
                try connection.query(Self.insertDevice, StoredRows.values(device)).changed == 1
            guard inserted else {
                let existing = try connection.query("SELECT status FROM devices WHERE key_id = $1", [.blob(device.keyID)])
                return .keyExists(DeviceStatus(rawValue: existing.count == 1 ? existing.string(0, 0) ?? "" : "") ?? .revoked)
            }
            try Self.insert(firstToken, into: connection)
            return .registered
        }
    }

    private static func device(_ rows: PostgresRows, _ row: Int) -> DeviceRecord {
        DeviceRecord(
            keyID: rows.bytes(row, 0) ?? [], clientID: rows.string(row, 1) ?? "", publicKey: rows.bytes(row, 2) ?? [],
            counter: UInt32(clamping: rows.int64(row, 3)), environment: rows.string(row, 4) ?? "", receipt: rows.bytes(row, 5) ?? [],
            status: DeviceStatus(rawValue: rows.string(row, 6) ?? "") ?? .revoked, createdAt: rows.int64(row, 7),
            updatedAt: rows.int64(row, 8), trustAnchor: rows.string(row, 9) ?? "", appID: rows.string(row, 10),
            receiptState: rows.string(row, 11).map { verdict in
                ReceiptState(
                    verdict: verdict, type: rows.string(row, 12), createdAt: rows.isNull(row, 13) ? nil : rows.int64(row, 13),
                    expiresAt: rows.isNull(row, 14) ? nil : rows.int64(row, 14),
                    riskMetric: rows.isNull(row, 15) ? nil : Int(rows.int64(row, 15)),
                    refreshedAt: rows.isNull(row, 16) ? nil : rows.int64(row, 16))
            })
    }

    /// The three reads of a refresh in one statement: each record a derived table of at most one
    /// row, left-joined to one row so that a missing record is a run of NULLs.
    private static let selectRefreshInputs = """
        SELECT i.*, c.*, d.* FROM (SELECT 1) one
        LEFT JOIN (\(selectIntegration)) i ON true
        LEFT JOIN (SELECT client_id, expires_at, consumed_at FROM challenges WHERE id = $2) c ON true
        LEFT JOIN (SELECT \(StoredRows.deviceColumns) FROM devices WHERE key_id = $3) d ON true
        """

    /// Where the challenge's three columns start in `selectRefreshInputs`: after the integration's
    /// columns and its bundle IDs; the device's follow them.
    private static let refreshInputsChallengeColumn = integrationColumns.split(separator: ",").count + 1

    package func refreshInputs(clientID: String, challengeID: [UInt8], keyID: [UInt8]) throws(StorageError) -> RefreshInputs {
        let rows = try read { connection throws(StorageError) in
            try connection.query(Self.selectRefreshInputs, [.text(clientID), .blob(challengeID), .blob(keyID)])
        }
        guard rows.count == 1 else { throw .statementFailed("the refresh inputs came back as \(rows.count) rows") }
        let device = rows.columns(from: Self.refreshInputsChallengeColumn + 3)
        return RefreshInputs(
            integration: Self.integration(rows), challenge: Self.challenge(rows.columns(from: Self.refreshInputsChallengeColumn)),
            device: device.isNull(0, 0) ? nil : Self.device(device, 0))
    }

    package func device(keyID: [UInt8]) throws(StorageError) -> DeviceRecord? {
        try read { connection throws(StorageError) -> DeviceRecord? in
            let rows = try connection.query("SELECT \(StoredRows.deviceColumns) FROM devices WHERE key_id = $1", [.blob(keyID)])
            return rows.count == 1 ? Self.device(rows, 0) : nil
        }
    }

    /// The refresh transaction as one statement, so one round trip and one transaction, with the
    /// SQLite store's steps in the same order:
    /// 1. `integration` locks the integration's row FOR KEY SHARE (the weakest lock that
    ///    revocation's and suspension's FOR UPDATE waits for, and the one the tokens foreign key
    ///    takes anyway) and reads its state: a revocation that committed first is seen (READ
    ///    COMMITTED re-reads a row it waited for), a later one waits for this commit and then
    ///    deletes the token. Materialized, and evaluated before `consumed` scans anything (the
    ///    always-true count in its condition), so the lock order is always integration first, as in
    ///    revocation: the two never deadlock;
    /// 2. `consumed` spends the challenge (compare-and-set), whatever the integration's state;
    /// 3. `advanced` compare-and-sets the counter of an active device, only when the challenge was
    ///    spent here and the integration is active and not suspended;
    /// 4. `minted` inserts the token only when the counter advanced; `trimmed`, with a cap of N
    ///    live tokens per device, deletes all but the newest N - 1 of the device's earlier tokens.
    private static let refreshStatement = """
        WITH integration AS MATERIALIZED (
            SELECT status, suspended_at FROM integrations WHERE client_id = $8 FOR KEY SHARE
        ), consumed AS (
            UPDATE challenges SET consumed_at = $4
            WHERE id = $5 AND consumed_at IS NULL AND (SELECT count(*) FROM integration) >= 0
            RETURNING 1
        ), advanced AS (
            UPDATE devices SET counter = $3, updated_at = $4
            WHERE key_id = $1 AND counter = $2 AND status = 'active' AND EXISTS (SELECT 1 FROM consumed)
                AND EXISTS (SELECT 1 FROM integration WHERE status = 'active' AND suspended_at IS NULL)
            RETURNING key_id
        ), minted AS (
            INSERT INTO tokens (token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at)
            SELECT $7::bytea, $8::text, $9::text, key_id, $10::text, $11::bigint, $12::bigint FROM advanced
            RETURNING key_id
        ), trimmed AS (
            DELETE FROM tokens WHERE key_id = $1 AND $6::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM minted)
                AND token_hash NOT IN
                    (SELECT token_hash FROM tokens WHERE key_id = $1 ORDER BY issued_at DESC, token_hash DESC LIMIT $6::bigint - 1)
        )
        SELECT (SELECT count(*) FROM consumed), (SELECT status FROM integration), (SELECT suspended_at FROM integration),
            (SELECT count(*) FROM minted)
        """

    package func advanceCounter(
        keyID: [UInt8], from previous: UInt32, to counter: UInt32, at time: Int64, token: TokenRecord,
        consumingChallenge challengeID: [UInt8], keepingLatest: Int?
    ) throws(StorageError) -> CounterAdvance {
        let rows = try write { connection throws(StorageError) in
            try connection.query(
                Self.refreshStatement,
                [
                    .blob(keyID), .integer(Int64(previous)), .integer(Int64(counter)), .integer(time), .blob(challengeID),
                    keepingLatest.map { .integer(Int64($0)) } ?? .null, .blob(token.tokenHash), .text(token.clientID),
                    .text(token.workspaceID), .text(token.scope), .integer(token.issuedAt), .integer(token.expiresAt),
                ])
        }
        guard rows.count == 1 else { throw .statementFailed("the refresh statement answered \(rows.count) rows") }
        guard rows.int64(0, 0) == 1 else { return .challengeUsed }
        switch IntegrationState(status: rows.string(0, 1), suspended: !rows.isNull(0, 2)) {
        case .active: break
        case .suspended: return .integrationSuspended
        case .revoked, .missing: return .integrationRevoked
        }
        if rows.int64(0, 3) == 1 { return .advanced }
        // The compare-and-set changed nothing: the device's row as it is now says why.
        let status = try read { connection throws(StorageError) in
            try connection.query("SELECT status FROM devices WHERE key_id = $1", [.blob(keyID)])
        }
        return status.count == 1 && status.string(0, 0) == "active" ? .counterChanged : .deviceBlocked
    }

    package func activeToken(hash: [UInt8], at time: Int64) throws(StorageError) -> TokenRecord? {
        try lookups.submit(TokenLookup(hash: hash, time: time))
    }

    package func activeToken(
        hash: [UInt8], at time: Int64, then reply: @escaping @Sendable (Result<TokenRecord?, StorageError>) -> Void
    ) {
        lookups.submit(TokenLookup(hash: hash, time: time), then: reply)
    }

    /// The active tokens among the hashes `$1` (a `BYTEA[]`) that expire after `$2`: the token's
    /// integration active and not suspended, its device active.
    private static let selectActiveTokens = """
        SELECT t.token_hash, t.client_id, t.workspace_id, t.key_id, t.scope, t.issued_at, t.expires_at
        FROM tokens t
        JOIN integrations i ON i.client_id = t.client_id
        JOIN devices d ON d.key_id = t.key_id
        WHERE t.token_hash = ANY ($1) AND t.expires_at > $2 AND i.status = 'active' AND i.suspended_at IS NULL
            AND d.status = 'active'
        """

    package func purgeExpired(at time: Int64) throws(StorageError) -> Int {
        try transaction { connection throws(StorageError) -> Int in
            let tokens = try connection.query("DELETE FROM tokens WHERE expires_at <= $1", [.integer(time)]).changed
            let challenges = try connection.query("DELETE FROM challenges WHERE expires_at <= $1", [.integer(time)]).changed
            // A bucket untouched for a day is full again: forgetting it changes nothing.
            try connection.query("DELETE FROM rate_buckets WHERE updated_at < $1", [.real(Double(time) - 86_400)])
            return tokens + challenges
        }
    }

    package func statistics() throws(StorageError) -> StoreStatistics {
        try read { connection throws(StorageError) -> StoreStatistics in
            let rows = try connection.query(
                """
                SELECT (SELECT count(*) FROM integrations WHERE status = 'active'),
                       (SELECT count(*) FROM devices WHERE status = 'active'),
                       (SELECT count(*) FROM integrations WHERE status = 'revoked'),
                       pg_database_size(current_database())
                """)
            return StoreStatistics(
                activeIntegrations: Int(rows.int64(0, 0)), activeDevices: Int(rows.int64(0, 1)), revokedIntegrations: Int(rows.int64(0, 2)),
                bytes: rows.int64(0, 3))
        }
    }
}
