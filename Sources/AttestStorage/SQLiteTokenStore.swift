import Synchronization

/// The SQLite `TokenStore`: one writer connection behind a mutex (SQLite has one writer anyway)
/// and a few reader connections for lookups, which WAL lets run beside the writer.
package final class SQLiteTokenStore: TokenStore {
    /// One connection and the lock that serialises its use.
    ///
    /// `@unchecked Sendable`: `database` is touched only inside `use`, which holds `lock`, so no
    /// two threads ever use the connection at once.
    final class Connection: @unchecked Sendable {
        private let database: SQLiteDatabase
        private let lock = Mutex(())

        init(_ database: SQLiteDatabase) { self.database = database }

        func use<T: Sendable>(_ body: (SQLiteDatabase) throws(StorageError) -> T) throws(StorageError) -> T {
            try lock.withLock { _ throws(StorageError) -> T in try body(database) }
        }
    }

    private let writer: Connection
    private let readers: [Connection]
    private let nextReader = Atomic<Int>(0)
    /// The database file.
    package let path: String

    /// Opens (creating) the database, checks its integrity, and applies the embedded migrations.
    /// Throws `corrupt`, `migrationUnknown` (a newer binary wrote it) or an I/O code: the caller
    /// must refuse to start.
    package init(
        path: String, readerCount: Int = 2, busyTimeout: Duration = .milliseconds(2000), migrateAt time: Int64
    ) throws(StorageError) {
        self.path = path
        let database = try SQLiteDatabase(path: path, busyTimeout: busyTimeout)
        try database.cheapCheck()
        _ = try Migrator().migrate(database, at: time)
        writer = Connection(database)
        var readers: [Connection] = []
        for _ in 0..<max(1, readerCount) {
            readers.append(Connection(try SQLiteDatabase(path: path, busyTimeout: busyTimeout)))
        }
        self.readers = readers
    }

    /// Opens an existing database without creating or migrating it (attestctl): `missing` when
    /// there is no file at `path`, `schemaBehind` or `migrationUnknown` when its schema is not
    /// exactly this binary's.
    package init(existingAt path: String, readerCount: Int = 1, busyTimeout: Duration = .milliseconds(5000)) throws(StorageError) {
        self.path = path
        guard FileSize.exists(path) else {
            throw .missing("there is no database at \(path); attestd creates it when it first starts (check --db or ATTESTD_DB)")
        }
        let database = try SQLiteDatabase(path: path, busyTimeout: busyTimeout, create: false)
        try database.cheapCheck()
        try Migrator().requireCurrent(database)
        writer = Connection(database)
        var readers: [Connection] = []
        for _ in 0..<max(1, readerCount) {
            readers.append(Connection(try SQLiteDatabase(path: path, busyTimeout: busyTimeout, create: false)))
        }
        self.readers = readers
    }

    // MARK: Plumbing

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction on the writer connection.
    ///
    /// `durable: false` commits with `synchronous=NORMAL` (in WAL mode: safe against a process
    /// crash, but a power loss may drop the last commits). Only for rows whose loss is harmless
    /// (an issued, unused challenge); every security decision commits with `synchronous=FULL`.
    @discardableResult
    private func write<T: Sendable>(durable: Bool = true, _ body: (SQLiteDatabase) throws(StorageError) -> T) throws(StorageError) -> T {
        try writer.use { database throws(StorageError) -> T in
            if !durable { try database.execute("PRAGMA synchronous=NORMAL") }
            defer { if !durable { try? database.execute("PRAGMA synchronous=FULL") } }
            do {
                return try database.immediateTransaction { () throws -> T in try body(database) }
            } catch let error as StorageError {
                throw error
            } catch {
                throw StorageError(.statementFailed, "unexpected error in a transaction: \(type(of: error))")
            }
        }
    }

    /// The writer's current `PRAGMA synchronous` (2 = FULL), for tests of the durability rule.
    package func writerSynchronousSetting() throws(StorageError) -> Int64 {
        try writer.use { database throws(StorageError) -> Int64 in
            let statement = try database.prepare("PRAGMA synchronous")
            _ = try statement.step()
            return statement.int64(at: 0)
        }
    }

    /// Runs `body` on the next reader connection (autocommit reads see the last committed state).
    private func read<T: Sendable>(_ body: (SQLiteDatabase) throws(StorageError) -> T) throws(StorageError) -> T {
        let index = nextReader.wrappingAdd(1, ordering: .relaxed).oldValue
        return try readers[abs(index % readers.count)].use(body)
    }

    private static func rows<T>(
        _ database: SQLiteDatabase, _ sql: String, _ arguments: [SQLValue], _ row: (SQLiteStatement) -> T
    ) throws(StorageError) -> [T] {
        let statement = try database.cachedStatement(sql)
        try statement.bind(arguments)
        var result: [T] = []
        while try statement.step() { result.append(row(statement)) }
        return result
    }

    /// Runs one cached statement with `arguments`; returns the number of rows it changed.
    @discardableResult
    private static func run(_ database: SQLiteDatabase, _ sql: String, _ arguments: [SQLValue]) throws(StorageError) -> Int {
        let statement = try database.cachedStatement(sql)
        try statement.bind(arguments)
        try statement.run()
        return database.changes
    }

    private static func integration(_ statement: SQLiteStatement, bundleIDs: [String]) -> IntegrationRecord {
        IntegrationRecord(
            clientID: statement.string(at: 0) ?? "", workspaceID: statement.string(at: 1) ?? "", name: statement.string(at: 2) ?? "",
            teamID: statement.string(at: 3) ?? "", bundleIDs: bundleIDs,
            environments: (statement.string(at: 4) ?? "").split(separator: ",").map(String.init),
            status: IntegrationStatus(rawValue: statement.string(at: 5) ?? "") ?? .revoked, createdAt: statement.int64(at: 6),
            revokedAt: statement.isNull(at: 7) ? nil : statement.int64(at: 7),
            suspendedAt: statement.isNull(at: 8) ? nil : statement.int64(at: 8),
            maxLiveTokensPerDevice: statement.isNull(at: 9) ? nil : Int(statement.int64(at: 9)),
            policy: IntegrationPolicy(
                requireValidReceipt: statement.int64(at: 10) == 1,
                maxRiskMetric: statement.isNull(at: 11) ? nil : Int(statement.int64(at: 11)),
                maxNewKeysPerHour: statement.isNull(at: 12) ? nil : Int(statement.int64(at: 12))))
    }

    private static let integrationColumns =
        "client_id, workspace_id, name, team_id, allowed_environments, status, created_at, revoked_at, suspended_at, "
        + "max_live_tokens_per_device, require_valid_receipt, max_risk_metric, max_new_keys_per_hour"

    private static func loadIntegration(_ database: SQLiteDatabase, clientID: String) throws(StorageError) -> IntegrationRecord? {
        let bundleIDs = try rows(
            database, "SELECT bundle_id FROM integration_bundle_ids WHERE client_id = ? ORDER BY bundle_id", [.text(clientID)]
        ) { $0.string(at: 0) ?? "" }
        return try rows(database, "SELECT \(integrationColumns) FROM integrations WHERE client_id = ?", [.text(clientID)]) {
            integration($0, bundleIDs: bundleIDs)
        }.first
    }

    private static func state(_ database: SQLiteDatabase, clientID: String) throws(StorageError) -> IntegrationState {
        let found = try rows(database, "SELECT status, suspended_at FROM integrations WHERE client_id = ?", [.text(clientID)]) {
            IntegrationState(status: $0.string(at: 0), suspended: !$0.isNull(at: 1))
        }
        return found.first ?? .missing
    }

    private static func token(_ row: SQLiteStatement) -> TokenRecord {
        TokenRecord(
            tokenHash: row.blob(at: 0) ?? [], clientID: row.string(at: 1) ?? "", workspaceID: row.string(at: 2) ?? "",
            keyID: row.blob(at: 3) ?? [], scope: row.string(at: 4) ?? "", issuedAt: row.int64(at: 5), expiresAt: row.int64(at: 6))
    }

    /// Built once: statements are cached by their text, and this one runs at every refresh.
    private static let insertToken = "INSERT INTO tokens (\(StoredRows.tokenColumns)) VALUES (\(StoredRows.sqlitePlaceholders(7)))"
    private static let insertDevice = "INSERT INTO devices (\(StoredRows.deviceColumns)) VALUES (\(StoredRows.sqlitePlaceholders(17)))"

    private static func insert(_ token: TokenRecord, into database: SQLiteDatabase) throws(StorageError) {
        try Self.run(database, insertToken, StoredRows.values(token))
    }

    // MARK: Integrations

    private static func insert(_ integration: IntegrationRecord, into database: SQLiteDatabase) throws(StorageError) {
        let values = StoredRows.values(integration)
        try Self.run(
            database,
            "INSERT INTO integrations (\(StoredRows.integrationInsertColumns)) VALUES (\(StoredRows.sqlitePlaceholders(values.count)))",
            values)
        for bundleID in integration.bundleIDs {
            try Self.run(
                database, "INSERT INTO integration_bundle_ids (client_id, bundle_id) VALUES (?, ?)",
                [.text(integration.clientID), .text(bundleID)])
        }
    }

    package func insertIntegration(_ integration: IntegrationRecord) throws(StorageError) {
        try write { database throws(StorageError) in try Self.insert(integration, into: database) }
    }

    package func integration(clientID: String) throws(StorageError) -> IntegrationRecord? {
        try read { database throws(StorageError) in try Self.loadIntegration(database, clientID: clientID) }
    }

    package func integrations() throws(StorageError) -> [IntegrationRecord] {
        try read { database throws(StorageError) in
            let ids = try Self.rows(database, "SELECT client_id FROM integrations ORDER BY created_at, client_id", []) {
                $0.string(at: 0) ?? ""
            }
            var result: [IntegrationRecord] = []
            for id in ids {
                if let record = try Self.loadIntegration(database, clientID: id) { result.append(record) }
            }
            return result
        }
    }

    package func revokeIntegration(clientID: String, at time: Int64) throws(StorageError) -> RevocationSummary? {
        try write { database throws(StorageError) -> RevocationSummary? in
            guard try Self.loadIntegration(database, clientID: clientID) != nil else { return nil }
            try Self.run(
                database, "UPDATE integrations SET status = 'revoked', revoked_at = ? WHERE client_id = ? AND status = 'active'",
                [.integer(time), .text(clientID)])
            let changed = database.changes == 1
            try Self.run(database, "DELETE FROM tokens WHERE client_id = ? AND expires_at > ?", [.text(clientID), .integer(time)])
            let tokens = database.changes
            // Expired tokens are inert already; remove them too so nothing of the integration lingers.
            try Self.run(database, "DELETE FROM tokens WHERE client_id = ?", [.text(clientID)])
            try Self.run(
                database, "UPDATE devices SET status = 'revoked', updated_at = ? WHERE client_id = ? AND status = 'active'",
                [.integer(time), .text(clientID)])
            let devices = database.changes
            try Self.run(database, "DELETE FROM challenges WHERE client_id = ?", [.text(clientID)])
            return RevocationSummary(changed: changed, tokensRevoked: tokens, devicesBlocked: devices)
        }
    }

    // MARK: Challenges

    package func insertChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool {
        // Not durable: losing an issued, unused challenge to a power cut only costs the device a retry.
        try write(durable: false) { database throws(StorageError) -> Bool in
            try Self.run(database, Self.insertChallengeForActive, [.blob(id), .text(clientID), .integer(createdAt), .integer(expiresAt)])
                == 1
        }
    }

    /// Inserts challenge `?1` of `?2` (created `?3`, expiring `?4`) when that integration is active.
    private static let insertChallengeForActive = """
        INSERT INTO challenges (id, client_id, created_at, expires_at)
        SELECT ?1, client_id, ?3, ?4 FROM integrations WHERE client_id = ?2 AND status = 'active' AND suspended_at IS NULL
        """

    package func replaceChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool {
        try write { database throws(StorageError) -> Bool in
            try Self.run(database, "DELETE FROM challenges WHERE id = ?", [.blob(id)])
            return try Self.run(
                database, Self.insertChallengeForActive, [.blob(id), .text(clientID), .integer(createdAt), .integer(expiresAt)]) == 1
        }
    }

    package func challenge(id: [UInt8]) throws(StorageError) -> ChallengeState? {
        try read { database throws(StorageError) in
            try Self.rows(database, "SELECT client_id, expires_at, consumed_at FROM challenges WHERE id = ?", [.blob(id)]) {
                ChallengeState(clientID: $0.string(at: 0) ?? "", expiresAt: $0.int64(at: 1), consumed: !$0.isNull(at: 2))
            }.first
        }
    }

    /// Consumes an unconsumed challenge inside the caller's transaction; false if it was consumed already.
    private static func consume(_ id: [UInt8], at time: Int64, in database: SQLiteDatabase) throws(StorageError) -> Bool {
        try run(database, "UPDATE challenges SET consumed_at = ? WHERE id = ? AND consumed_at IS NULL", [.integer(time), .blob(id)]) == 1
    }

    package func consumeChallenge(id: [UInt8], at time: Int64) throws(StorageError) -> Bool {
        try write { database throws(StorageError) -> Bool in try Self.consume(id, at: time, in: database) }
    }

    // MARK: Devices and tokens

    package func registerDevice(
        _ device: DeviceRecord, firstToken: TokenRecord, consumingChallenge challengeID: [UInt8], at time: Int64
    ) throws(StorageError) -> RegistrationOutcome {
        try write { database throws(StorageError) -> RegistrationOutcome in
            guard try Self.consume(challengeID, at: time, in: database) else { return .challengeUsed }
            switch try Self.state(database, clientID: device.clientID) {
            case .active: break
            case .suspended: return .integrationSuspended
            case .revoked, .missing: return .integrationRevoked
            }
            let existing = try Self.rows(database, "SELECT status FROM devices WHERE key_id = ?", [.blob(device.keyID)]) {
                DeviceStatus(rawValue: $0.string(at: 0) ?? "") ?? .revoked
            }
            if let status = existing.first { return .keyExists(status) }
            try Self.insert(device, into: database)
            try Self.insert(firstToken, into: database)
            return .registered
        }
    }

    private static func device(_ row: SQLiteStatement) -> DeviceRecord {
        DeviceRecord(
            keyID: row.blob(at: 0) ?? [], clientID: row.string(at: 1) ?? "", publicKey: row.blob(at: 2) ?? [],
            counter: UInt32(clamping: row.int64(at: 3)), environment: row.string(at: 4) ?? "", receipt: row.blob(at: 5) ?? [],
            status: DeviceStatus(rawValue: row.string(at: 6) ?? "") ?? .revoked, createdAt: row.int64(at: 7), updatedAt: row.int64(at: 8),
            trustAnchor: row.string(at: 9) ?? "", appID: row.string(at: 10),
            receiptState: row.string(at: 11).map { verdict in
                ReceiptState(
                    verdict: verdict, type: row.string(at: 12), createdAt: row.isNull(at: 13) ? nil : row.int64(at: 13),
                    expiresAt: row.isNull(at: 14) ? nil : row.int64(at: 14), riskMetric: row.isNull(at: 15) ? nil : Int(row.int64(at: 15)),
                    refreshedAt: row.isNull(at: 16) ? nil : row.int64(at: 16))
            })
    }

    private static func insert(_ device: DeviceRecord, into database: SQLiteDatabase) throws(StorageError) {
        try Self.run(database, insertDevice, StoredRows.values(device))
    }

    package func device(keyID: [UInt8]) throws(StorageError) -> DeviceRecord? {
        try read { database throws(StorageError) in
            try Self.rows(database, "SELECT \(StoredRows.deviceColumns) FROM devices WHERE key_id = ?", [.blob(keyID)], Self.device).first
        }
    }

    package func advanceCounter(
        keyID: [UInt8], from previous: UInt32, to counter: UInt32, at time: Int64, token: TokenRecord,
        consumingChallenge challengeID: [UInt8], keepingLatest: Int?
    ) throws(StorageError) -> CounterAdvance {
        try write { database throws(StorageError) -> CounterAdvance in
            guard try Self.consume(challengeID, at: time, in: database) else { return .challengeUsed }
            switch try Self.state(database, clientID: token.clientID) {
            case .active: break
            case .suspended: return .integrationSuspended
            case .revoked, .missing: return .integrationRevoked
            }
            let status = try Self.rows(database, "SELECT status FROM devices WHERE key_id = ?", [.blob(keyID)]) { $0.string(at: 0) }
            guard status.first == "active" else { return .deviceBlocked }
            // Compare-and-set on the value the assertion was verified against: of two requests
            // racing with the same counter, exactly one changes the row.
            try Self.run(
                database, "UPDATE devices SET counter = ?, updated_at = ? WHERE key_id = ? AND counter = ?",
                [.integer(Int64(counter)), .integer(time), .blob(keyID), .integer(Int64(previous))])
            guard database.changes == 1 else { return .counterChanged }
            try Self.insert(token, into: database)
            if let keepingLatest {
                try Self.run(
                    database,
                    """
                    DELETE FROM tokens WHERE key_id = ? AND token_hash NOT IN
                        (SELECT token_hash FROM tokens WHERE key_id = ? ORDER BY issued_at DESC, token_hash DESC LIMIT ?)
                    """, [.blob(keyID), .blob(keyID), .integer(Int64(keepingLatest))])
            }
            return .advanced
        }
    }

    package func activeToken(hash: [UInt8], at time: Int64) throws(StorageError) -> TokenRecord? {
        try read { database throws(StorageError) in
            try Self.rows(
                database,
                """
                SELECT t.token_hash, t.client_id, t.workspace_id, t.key_id, t.scope, t.issued_at, t.expires_at
                FROM tokens t
                JOIN integrations i ON i.client_id = t.client_id
                JOIN devices d ON d.key_id = t.key_id
                WHERE t.token_hash = ? AND t.expires_at > ? AND i.status = 'active' AND i.suspended_at IS NULL
                    AND d.status = 'active'
                """, [.blob(hash), .integer(time)], Self.token
            ).first
        }
    }

    package func purgeExpired(at time: Int64) throws(StorageError) -> Int {
        try write { database throws(StorageError) -> Int in
            try Self.run(database, "DELETE FROM tokens WHERE expires_at <= ?", [.integer(time)])
            let tokens = database.changes
            try Self.run(database, "DELETE FROM challenges WHERE expires_at <= ?", [.integer(time)])
            let challenges = database.changes
            // A bucket untouched for a day is full again: forgetting it changes nothing.
            try Self.run(database, "DELETE FROM rate_buckets WHERE updated_at < ?", [.real(Double(time) - 86_400)])
            return tokens + challenges
        }
    }

    package func setSuspended(clientID: String, at time: Int64?) throws(StorageError) -> Bool? {
        try write { database throws(StorageError) -> Bool? in
            switch try Self.state(database, clientID: clientID) {
            case .missing: return nil
            case .revoked: return false
            case .active, .suspended:
                try Self.run(
                    database, "UPDATE integrations SET suspended_at = ? WHERE client_id = ?",
                    [time.map { .integer($0) } ?? .null, .text(clientID)])
                return true
            }
        }
    }

    package func revokeToken(hash: [UInt8]) throws(StorageError) -> Bool {
        try write { database throws(StorageError) -> Bool in
            try Self.run(database, "DELETE FROM tokens WHERE token_hash = ?", [.blob(hash)]) == 1
        }
    }

    package func blockDevice(keyID: [UInt8], at time: Int64) throws(StorageError) -> Int? {
        try write { database throws(StorageError) -> Int? in
            guard
                try Self.run(
                    database, "UPDATE devices SET status = 'revoked', updated_at = ? WHERE key_id = ?", [.integer(time), .blob(keyID)]) == 1
            else { return nil }
            return try Self.run(database, "DELETE FROM tokens WHERE key_id = ?", [.blob(keyID)])
        }
    }

    package func updatePolicy(clientID: String, policy: IntegrationPolicy, maxLiveTokensPerDevice: Int?) throws(StorageError) -> Bool? {
        try write { database throws(StorageError) -> Bool? in
            let changed = try Self.run(
                database,
                """
                UPDATE integrations SET require_valid_receipt = ?, max_risk_metric = ?, max_new_keys_per_hour = ?,
                    max_live_tokens_per_device = ? WHERE client_id = ?
                """,
                [
                    .integer(policy.requireValidReceipt ? 1 : 0), policy.maxRiskMetric.map { .integer(Int64($0)) } ?? .null,
                    policy.maxNewKeysPerHour.map { .integer(Int64($0)) } ?? .null,
                    maxLiveTokensPerDevice.map { .integer(Int64($0)) } ?? .null,
                    .text(clientID),
                ])
            return changed == 1 ? true : nil
        }
    }

    package func deviceSummaries(clientID: String, at time: Int64) throws(StorageError) -> [DeviceSummary] {
        try read { database throws(StorageError) -> [DeviceSummary] in
            let devices = try Self.rows(
                database, "SELECT \(StoredRows.deviceColumns) FROM devices WHERE client_id = ? ORDER BY created_at, key_id",
                [.text(clientID)],
                Self.device)
            let counts = try Self.rows(
                database, "SELECT key_id, count(*) FROM tokens WHERE client_id = ? AND expires_at > ? GROUP BY key_id",
                [.text(clientID), .integer(time)]
            ) { ($0.blob(at: 0) ?? [], Int($0.int64(at: 1))) }
            let byKey = Dictionary(counts, uniquingKeysWith: +)
            return devices.map { DeviceSummary(device: $0, liveTokens: byKey[$0.keyID] ?? 0) }
        }
    }

    package func liveTokenCount(keyID: [UInt8], at time: Int64) throws(StorageError) -> Int {
        try read { database throws(StorageError) -> Int in
            Int(
                try Self.rows(database, "SELECT count(*) FROM tokens WHERE key_id = ? AND expires_at > ?", [.blob(keyID), .integer(time)]) {
                    $0.int64(at: 0)
                }.first ?? 0)
        }
    }

    package func newKeyCount(clientID: String, since: Int64) throws(StorageError) -> Int {
        try read { database throws(StorageError) -> Int in
            Int(
                try Self.rows(
                    database, "SELECT count(*) FROM devices WHERE client_id = ? AND created_at >= ?", [.text(clientID), .integer(since)]
                ) { $0.int64(at: 0) }.first ?? 0)
        }
    }

    package func updateReceipt(keyID: [UInt8], receipt: [UInt8], state: ReceiptState) throws(StorageError) {
        try write { database throws(StorageError) in
            try Self.run(
                database,
                """
                UPDATE devices SET receipt = ?, receipt_verdict = ?, receipt_type = ?, receipt_created_at = ?, receipt_expires_at = ?,
                    risk_metric = ?, receipt_refreshed_at = ? WHERE key_id = ?
                """, [.blob(receipt)] + StoredRows.values(state) + [.blob(keyID)])
        }
    }

    package func touchReceipt(keyID: [UInt8], at time: Int64) throws(StorageError) {
        try write { database throws(StorageError) in
            try Self.run(database, "UPDATE devices SET receipt_refreshed_at = ? WHERE key_id = ?", [.integer(time), .blob(keyID)])
        }
    }

    package func setFraudKey(clientID: String, keyID: String, sealedKey: [UInt8], at time: Int64) throws(StorageError) -> Bool? {
        try write { database throws(StorageError) -> Bool? in
            guard try Self.loadIntegration(database, clientID: clientID) != nil else { return nil }
            try Self.run(
                database, "INSERT OR REPLACE INTO fraud_keys (client_id, key_id, sealed_key, created_at) VALUES (?, ?, ?, ?)",
                [.text(clientID), .text(keyID), .blob(sealedKey), .integer(time)])
            return true
        }
    }

    package func fraudKey(clientID: String) throws(StorageError) -> (keyID: String, sealedKey: [UInt8])? {
        try read { database throws(StorageError) in
            try Self.rows(database, "SELECT key_id, sealed_key FROM fraud_keys WHERE client_id = ?", [.text(clientID)]) {
                (keyID: $0.string(at: 0) ?? "", sealedKey: $0.blob(at: 1) ?? [])
            }.first
        }
    }

    package func receiptRefreshCandidates(dueBefore: Int64, limit: Int) throws(StorageError) -> [DeviceRecord] {
        try read { database throws(StorageError) in
            try Self.rows(
                database,
                """
                SELECT \(StoredRows.deviceColumns.split(separator: ",").map { "d." + $0.filter { $0 != " " } }.joined(separator: ", "))
                FROM devices d JOIN integrations i ON i.client_id = d.client_id JOIN fraud_keys f ON f.client_id = d.client_id
                WHERE d.status = 'active' AND i.status = 'active' AND i.suspended_at IS NULL
                    AND coalesce(d.receipt_refreshed_at, d.created_at) <= ?
                ORDER BY coalesce(d.receipt_refreshed_at, d.created_at) LIMIT ?
                """, [.integer(dueBefore), .integer(Int64(limit))], Self.device)
        }
    }

    package func appendAudit(_ entry: AuditEntry) throws(StorageError) {
        try write { database throws(StorageError) in
            try Self.run(
                database, "INSERT INTO audit_log (at, actor, action, target, detail) VALUES (?, ?, ?, ?, ?)",
                [.integer(entry.at), .text(entry.actor), .text(entry.action), .text(entry.target), .text(entry.detail)])
        }
    }

    package func auditLog(since: Int64, limit: Int) throws(StorageError) -> [AuditEntry] {
        try read { database throws(StorageError) in
            try Self.rows(
                database, "SELECT at, actor, action, target, detail FROM audit_log WHERE at >= ? ORDER BY id LIMIT ?",
                [.integer(since), .integer(Int64(limit))]
            ) {
                AuditEntry(
                    at: $0.int64(at: 0), actor: $0.string(at: 1) ?? "", action: $0.string(at: 2) ?? "", target: $0.string(at: 3) ?? "",
                    detail: $0.string(at: 4) ?? "")
            }
        }
    }

    package func snapshot(at time: Int64) throws(StorageError) -> StoreSnapshot {
        // On the writer, in one transaction: the three reads see one state.
        try write { database throws(StorageError) -> StoreSnapshot in
            let ids = try Self.rows(database, "SELECT client_id FROM integrations ORDER BY created_at, client_id", []) {
                $0.string(at: 0) ?? ""
            }
            var integrations: [IntegrationRecord] = []
            for id in ids {
                if let record = try Self.loadIntegration(database, clientID: id) { integrations.append(record) }
            }
            let devices = try Self.rows(
                database, "SELECT \(StoredRows.deviceColumns) FROM devices ORDER BY created_at, key_id", [], Self.device)
            let tokens = try Self.rows(
                database,
                """
                SELECT token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at FROM tokens
                WHERE expires_at > ? ORDER BY issued_at, token_hash
                """, [.integer(time)], Self.token)
            return StoreSnapshot(integrations: integrations, devices: devices, tokens: tokens)
        }
    }

    package func restore(_ snapshot: StoreSnapshot) throws(StorageError) {
        try write { database throws(StorageError) in
            let existing = try Self.rows(database, "SELECT count(*) FROM integrations", []) { $0.int64(at: 0) }.first ?? 0
            guard existing == 0 else { throw .notEmpty("the target database holds \(existing) integrations already") }
            for integration in snapshot.integrations { try Self.insert(integration, into: database) }
            for device in snapshot.devices { try Self.insert(device, into: database) }
            for token in snapshot.tokens { try Self.insert(token, into: database) }
        }
    }

    package func takeSharedToken(bucket: String, perSecond: Double, burst: Double, at now: Double) throws(StorageError) -> Int? {
        // Not durable: a bucket forgotten in a power cut only forgives.
        try write(durable: false) { database throws(StorageError) -> Int? in
            let found = try Self.rows(database, "SELECT tokens, updated_at FROM rate_buckets WHERE bucket = ?", [.text(bucket)]) {
                TokenBucket(tokens: $0.double(at: 0), updatedAt: $0.double(at: 1))
            }
            var state = found.first ?? TokenBucket(tokens: burst, updatedAt: now)
            let wait = state.take(perSecond: perSecond, burst: burst, now: now)
            try Self.run(
                database, "INSERT OR REPLACE INTO rate_buckets (bucket, tokens, updated_at) VALUES (?, ?, ?)",
                [.text(bucket), .real(state.tokens), .real(state.updatedAt)])
            return wait
        }
    }

    package func close() throws(StorageError) {
        try writer.use { database throws(StorageError) in
            // TRUNCATE: every page of the log goes into the file and the log is cut to zero bytes,
            // so a copy of the .sqlite file alone holds everything (docs/OPERATIONS.md, backups).
            let statement = try database.prepare("PRAGMA wal_checkpoint(TRUNCATE)")
            _ = try statement.step()
            guard statement.int64(at: 0) == 0 else {
                throw .busy("the write-ahead log could not be checkpointed: another connection is reading")
            }
        }
    }

    package func checkIntegrity() throws(StorageError) {
        try writer.use { database throws(StorageError) in try database.quickCheck() }
    }

    package func checkAvailable() throws(StorageError) {
        try read { database throws(StorageError) in _ = try Self.rows(database, "SELECT 1", []) { $0.int64(at: 0) } }
    }

    package func statistics() throws(StorageError) -> StoreStatistics {
        try read { database throws(StorageError) -> StoreStatistics in
            let counts = try Self.rows(
                database,
                """
                SELECT (SELECT count(*) FROM integrations WHERE status = 'active'),
                       (SELECT count(*) FROM devices WHERE status = 'active'),
                       (SELECT count(*) FROM integrations WHERE status = 'revoked'),
                       (SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size())
                """, []
            ) { ($0.int64(at: 0), $0.int64(at: 1), $0.int64(at: 2), $0.int64(at: 3)) }
            let (integrations, devices, revoked, pages) = counts.first ?? (0, 0, 0, 0)
            return StoreStatistics(
                activeIntegrations: Int(integrations), activeDevices: Int(devices), revokedIntegrations: Int(revoked),
                bytes: pages + FileSize.of(path + "-wal"))
        }
    }
}
