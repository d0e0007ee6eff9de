internal import Glibc

/// Receipts, the audit log and upkeep, written once for both dialects.
extension SQLTokenStore {
    // MARK: ReceiptStore and fraud keys

    package func updateReceipt(keyID: [UInt8], receipt: [UInt8], state: ReceiptState) throws(StorageError) {
        try perform(.statement) { session throws(StorageError) in
            try session.run(UpkeepSQL.updateReceipt, [.blob(receipt)] + ReceiptState.storedValues(state) + [.blob(keyID)])
        }
    }

    package func touchReceipt(keyID: [UInt8], at time: Int64) throws(StorageError) {
        try perform(.statement) { session throws(StorageError) in try session.run(UpkeepSQL.touchReceipt, [.integer(time), .blob(keyID)]) }
    }

    package func setFraudKey(
        clientID: String, keyID: String, sealedKey: [UInt8], at time: Int64, audit: AuditNote<Void>?
    ) throws(StorageError) -> Bool? {
        try perform(.transaction) { session throws(StorageError) -> Bool? in
            guard try Self.integrationState(clientID, SharedSQL.lockIntegrationForUpdate, in: session) != .missing else { return nil }
            try session.run(UpkeepSQL.upsertFraudKey, [.text(clientID), .text(keyID), .blob(sealedKey), .integer(time)])
            try Self.audit(audit, (), in: session)
            return true
        }
    }

    package func fraudKey(clientID: String) throws(StorageError) -> (keyID: String, sealedKey: [UInt8])? {
        try perform(.read) { session throws(StorageError) -> (keyID: String, sealedKey: [UInt8])? in
            guard let row = try session.row(UpkeepSQL.selectFraudKey, [.text(clientID)]) else { return nil }
            return (keyID: try row.text(0), sealedKey: try row.blob(1))
        }
    }

    package func receiptRefreshCandidates(dueBefore: Int64, limit: Int) throws(StorageError) -> [DeviceRecord] {
        try perform(.read) { session throws(StorageError) in
            try session.records(DeviceRecord.self, UpkeepSQL.receiptRefreshCandidates, [.integer(dueBefore), .integer(Int64(limit))])
        }
    }

    // MARK: Audit log

    // MARK: StoreMaintenance

    /// Deletes what expired at `time`, in transactions of `purgeBatch` rows at most, so that a
    /// wave of tokens expiring at once (a release's worth of devices, an hour later) never holds
    /// the writer, or a PostgreSQL backend, for long: writes wait for one batch at most, and
    /// requests share the cores with the purge a batch at a time (as PostgreSQL's own vacuum
    /// does in small steps). A purge that stops half way has still deleted only expired rows.
    package func purgeExpired(at time: Int64) throws(StorageError) -> Int {
        try purgeExpired(at: time, batch: Self.purgeBatch)
    }

    /// The purge in batches of `batch` rows (tests use small ones).
    package func purgeExpired(at time: Int64, batch: Int) throws(StorageError) -> Int {
        var purged = 0
        for statement in [UpkeepSQL.purgeTokens, UpkeepSQL.purgeChallenges] {
            var deleted = batch
            while deleted == batch {
                let began = ContinuousClock.now
                deleted = try perform(.transaction) { session throws(StorageError) in
                    try session.run(UpkeepSQL.deletionsRetireNothing, [])
                    return try session.run(statement, [.integer(time), .integer(Int64(batch))])
                }
                purged += deleted
                if deleted == batch { Self.pause(after: ContinuousClock.now - began) }
            }
        }
        try perform(.transaction) { session throws(StorageError) in
            try session.run(AdminKeySQL.purgeSessions, [.integer(time)])
            try session.run(AdminKeySQL.purgeSignIns, [.integer(time - AuditQuery.signInRetention)])
            // A bucket untouched for a day is full again: forgetting it changes nothing.
            try session.run(UpkeepSQL.purgeBuckets, [.real(Double(time) - 86_400)])
            try session.run(VerificationCountSQL.purge, [.integer(time - VerificationCount.retention)])
        }
        return purged
    }

    /// Rows one purge transaction deletes at most, unless the backend says otherwise: 2,000 on
    /// PostgreSQL, where a delete only marks its rows and holds no lock another write waits for
    /// (measured in docs/BENCHMARKS.md).
    package static var purgeBatch: Int { 2_000 }

    /// Between two batches the purge waits as long as the last one took (50 ms at most): it
    /// takes at most half of the writer, or of a PostgreSQL backend and the disk, while requests
    /// go on, as PostgreSQL's vacuum sleeps between its steps (`vacuum_cost_delay`). Without the
    /// pauses, a large purge raised authorize's tail latency (docs/BENCHMARKS.md).
    private static func pause(after batch: Duration) {
        let pause = min(batch, .milliseconds(50))
        let microseconds = pause.components.seconds * 1_000_000 + pause.components.attoseconds / 1_000_000_000_000
        usleep(UInt32(max(0, microseconds)))
    }

    package func snapshot(at time: Int64) throws(StorageError) -> StoreSnapshot {
        try perform(.snapshot) { session throws(StorageError) -> StoreSnapshot in
            StoreSnapshot(
                integrations: try session.records(IntegrationRecord.self, SharedSQL.selectIntegrations, []),
                devices: try session.records(DeviceRecord.self, UpkeepSQL.allDevices, []),
                tokens: try session.records(TokenRecord.self, UpkeepSQL.liveTokens, [.integer(time)]),
                auditEntries: try session.records(AuditEntry.self, UpkeepSQL.allAudit, []),
                adminKeys: try session.records(AdminKeyRecord.self, AdminKeySQL.allKeys, []),
                debugTokens: try session.records(DebugTokenRecord.self, DebugTokenSQL.all, []),
                verificationCounts: try session.records(VerificationCount.self, VerificationCountSQL.all, []))
        }
    }

    package func restore(_ snapshot: StoreSnapshot) throws(StorageError) {
        try perform(.transaction) { session throws(StorageError) in
            if session.dialect == .postgresql {
                // Locks out a concurrent restore (and any writer of integrations) until this
                // commits; SQLite's writer transaction holds its one write lock already.
                try session.run(UpkeepSQL.lockIntegrationsTable, [])
            }
            let existing = try session.count(UpkeepSQL.countIntegrations, [])
            guard existing == 0 else { throw .notEmpty("the target database holds \(existing) integrations already") }
            for integration in snapshot.integrations { try Self.insert(integration, in: session) }
            try Self.insertBatches(snapshot.devices, into: "devices", in: session)
            try Self.insertBatches(snapshot.tokens, into: "tokens", in: session)
            try Self.insertBatches(snapshot.auditEntries, into: "audit_log", in: session)
            try Self.insertBatches(snapshot.adminKeys, into: "admin_keys", in: session)
            try Self.insertBatches(snapshot.debugTokens, into: "debug_tokens", in: session)
            try Self.insertBatches(snapshot.verificationCounts, into: "verification_counts", in: session)
        }
    }

    /// Rows per multi-row INSERT when restoring (17 columns x 500 stays under both SQLite's
    /// 32,766 and PostgreSQL's 65,535 parameters).
    private static var restoreBatch: Int { 500 }

    /// Inserts `records` with one multi-row INSERT per batch.
    private static func insertBatches<Record: StoredRecord>(
        _ records: [Record], into table: String, in session: any SQLSession
    ) throws(StorageError) {
        var start = 0
        while start < records.count {
            let batch = records[start..<min(records.count, start + restoreBatch)]
            let row = "(" + SQLText.placeholders(Record.columns.count) + ")"
            let statement = SQLStatement(
                "INSERT INTO \(table) (\(SQLText.list(Record.columns))) VALUES "
                    + Array(repeating: row, count: batch.count).joined(separator: ", "))
            try session.run(statement, batch.flatMap(\.storedValues))
            start += batch.count
        }
    }
}

/// The statements of receipts and upkeep, written once.
package enum UpkeepSQL {
    static let updateReceipt = SQLStatement(
        "UPDATE devices SET receipt = ?, \(ReceiptState.columns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE key_id = ?")
    static let touchReceipt = SQLStatement("UPDATE devices SET receipt_refreshed_at = ? WHERE key_id = ?")
    static let upsertFraudKey = SQLStatement(
        """
        INSERT INTO fraud_keys (client_id, key_id, sealed_key, created_at) VALUES (?, ?, ?, ?)
        ON CONFLICT (client_id) DO UPDATE SET key_id = excluded.key_id, sealed_key = excluded.sealed_key, created_at = excluded.created_at
        """)
    static let selectFraudKey = SQLStatement("SELECT key_id, sealed_key FROM fraud_keys WHERE client_id = ?")
    static let receiptRefreshCandidates = SQLStatement(
        """
        SELECT \(SQLText.list(DeviceRecord.columns, alias: "d"))
        FROM devices d JOIN integrations i ON i.client_id = d.client_id JOIN fraud_keys f ON f.client_id = d.client_id
        WHERE d.status = 'active' AND i.status = 'active' AND i.suspended_at IS NULL
            AND d.credential_sha256 IS NOT NULL AND d.receipt_verdict = 'valid'
            AND coalesce(d.receipt_refreshed_at, d.created_at) <= ?
        ORDER BY coalesce(d.receipt_refreshed_at, d.created_at) LIMIT ?
        """)
    /// One batch of the purge each: the oldest expired rows first, `LIMIT ?` of them.
    package static let purgeTokens = purgeBatch(of: "tokens", key: "token_hash")
    package static let purgeChallenges = purgeBatch(of: "challenges", key: "id")

    /// Deletes the oldest `LIMIT ?` rows of `table` that expired at `?`, found through its expiry
    /// index and deleted through its primary key `key`. PostgreSQL's text takes the keys as one
    /// array: its sessions plan each statement once for every parameter (`plan_cache_mode`), and
    /// that plan of `key IN (subquery)` joined the batch to a scan of the whole table, so a batch
    /// took longer the larger the table (docs/BENCHMARKS.md).
    private static func purgeBatch(of table: String, key: String) -> SQLStatement {
        let oldest = "SELECT \(key) FROM \(table) WHERE expires_at <= ? ORDER BY expires_at LIMIT ?"
        return SQLStatement(
            sqlite: "DELETE FROM \(table) WHERE \(key) IN (\(oldest))",
            postgresql: SQLStatement.numbered("DELETE FROM \(table) WHERE \(key) = ANY (ARRAY(\(oldest)))"))
    }
    static let purgeBuckets = SQLStatement("DELETE FROM rate_buckets WHERE updated_at < ?")
    /// Says, for the rest of the transaction, that the tokens it deletes were already refused
    /// (expired), so PostgreSQL's trigger raises no answer epoch for them (migration 0011).
    static let deletionsRetireNothing = SQLStatement(
        sqlite: "SELECT 1", postgresql: "SELECT set_config('attestd.deletions_retire_nothing', 'on', true)")
    /// In their order of issue, so that a copy inserting them in this order numbers them alike.
    static let allDevices = SQLStatement(
        inIssueOrder: "SELECT \(SQLText.list(DeviceRecord.columns)) FROM devices ORDER BY \(SharedSQL.devicesByIssue)")
    static let liveTokens = SQLStatement(
        inIssueOrder: "SELECT \(SQLText.list(TokenRecord.columns)) FROM tokens WHERE expires_at > ? ORDER BY \(SharedSQL.tokensByIssue)")
    static let allAudit = SQLStatement("SELECT \(SQLText.list(AuditEntry.columns)) FROM audit_log ORDER BY id")
    static let lockIntegrationsTable = SQLStatement(sqlite: "SELECT 1", postgresql: "LOCK TABLE integrations IN EXCLUSIVE MODE")
    static let countIntegrations = SQLStatement("SELECT count(*) FROM integrations")
}
