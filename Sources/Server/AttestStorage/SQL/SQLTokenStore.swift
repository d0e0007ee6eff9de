/// How one store operation uses the database; each backend maps it to its own mechanics.
package enum SQLWork: Sendable {
    /// Reads outside a transaction: each statement sees the last committed state (SQLite: a
    /// reader connection; PostgreSQL: autocommit).
    case read
    /// Reads that must see one state (SQLite: a read transaction on a reader; PostgreSQL: REPEATABLE READ).
    case snapshot
    /// One writing statement (PostgreSQL: autocommit, without the round trips of BEGIN and COMMIT).
    case statement(durable: Bool)
    /// Several statements in one transaction (SQLite: `BEGIN IMMEDIATE` on the writer; PostgreSQL:
    /// READ COMMITTED, retried after a deadlock or serialization failure).
    case transaction(durable: Bool)

    /// Written to survive a power cut. `durable: false` (SQLite `synchronous=NORMAL`, still safe
    /// against a crash of the process) only for rows whose loss is harmless: an issued, unused
    /// challenge, a rate bucket. Every security decision is durable.
    static let statement = SQLWork.statement(durable: true)
    static let transaction = SQLWork.transaction(durable: true)
}

/// A `TokenStore` over SQL: the operations whose SQL is the same in both dialects are written
/// once, in the extensions of this protocol, as statements run through an `SQLSession`; each
/// backend supplies `perform` (how a piece of work gets a connection and a transaction) and
/// overrides only what its dialect does differently (PostgreSQL: the one-statement refresh, the
/// grouped token lookups, the refresh's reads in one round trip).
package protocol SQLTokenStore: TokenStore {
    /// Runs `body` as `work` on a session of this store's database.
    @discardableResult
    func perform<T: Sendable>(_ work: SQLWork, _ body: (any SQLSession) throws(StorageError) -> T) throws(StorageError) -> T

    /// Rows one purge transaction deletes at most (`purgeExpired`).
    static var purgeBatch: Int { get }

    /// Returns once no node answers from memory what it kept before the changes committed so far
    /// (PostgreSQL: every unexpired answer lease has acknowledged the answer epoch as it is now,
    /// raised by those changes); SQLite's kept answers are retired by the commit itself. Throws
    /// when that cannot be confirmed; the changes stay committed.
    func awaitAnswersRetired() throws(StorageError)
}

/// The statements of the shared operations, written once (`?` placeholders; see `SQLStatement`).
enum SharedSQL {
    // MARK: Orders of issue (migration 0012)

    static let integrationsByIssue = SQLText.issueOrder(time: "created_at", key: "client_id")
    static let devicesByIssue = devicesByIssue(newestFirst: false)
    static func devicesByIssue(newestFirst: Bool) -> String {
        SQLText.issueOrder(time: "created_at", key: "key_id", newestFirst: newestFirst)
    }
    static let tokensByIssue = SQLText.issueOrder(time: "issued_at", key: "token_hash")
    static let tokensNewestFirst = SQLText.issueOrder(time: "issued_at", key: "token_hash", newestFirst: true)

    // MARK: Integrations

    static let insertIntegration = SQLStatement(SQLText.insert(into: "integrations", IntegrationRecord.columns))
    static let insertBundleID = SQLStatement("INSERT INTO integration_bundle_ids (client_id, bundle_id) VALUES (?, ?)")
    static let selectIntegration = IntegrationRecord.select("WHERE client_id = ?")
    static let selectIntegrations = IntegrationRecord.select("ORDER BY \(integrationsByIssue)")
    /// The integration's state, its row locked against concurrent changes of it (PostgreSQL;
    /// SQLite's writer transaction holds the one write lock already).
    static let lockIntegrationForUpdate = SQLStatement(
        "SELECT status, suspended_at FROM integrations WHERE client_id = ?", forPostgreSQL: " FOR UPDATE")
    /// The integration's state, its row locked against a concurrent revocation or suspension (the
    /// weakest lock their FOR UPDATE waits for, and the one the foreign keys take anyway).
    static let lockIntegrationForKeyShare = SQLStatement(
        "SELECT status, suspended_at FROM integrations WHERE client_id = ?", forPostgreSQL: " FOR KEY SHARE")
    static let revoke = SQLStatement("UPDATE integrations SET status = 'revoked', revoked_at = ? WHERE client_id = ? AND status = 'active'")
    static let deleteLiveTokensOfIntegration = SQLStatement("DELETE FROM tokens WHERE client_id = ? AND expires_at > ?")
    static let deleteTokensOfIntegration = SQLStatement("DELETE FROM tokens WHERE client_id = ?")
    static let blockDevicesOfIntegration = SQLStatement(
        "UPDATE devices SET status = 'revoked', updated_at = ? WHERE client_id = ? AND status = 'active'")
    static let deleteChallengesOfIntegration = SQLStatement("DELETE FROM challenges WHERE client_id = ?")
    static let suspend = SQLStatement("UPDATE integrations SET suspended_at = ? WHERE client_id = ?")
    static let updatePolicy = SQLStatement(
        """
        UPDATE integrations SET require_valid_receipt = ?, max_risk_metric = ?, max_new_keys_per_hour = ?,
            max_live_tokens_per_device = ? WHERE client_id = ?
        """)

    // MARK: Challenges

    /// Inserts challenge `?1` of `?2` (created `?3`, expiring `?4`) when that integration is
    /// active. The integration is read, not locked: since migration 0007 the table has no foreign
    /// key, whose row lock on the integration was WAL-logged on PostgreSQL and so made every
    /// challenge's commit wait for a flush. Integrations are never deleted, so the read guards as
    /// well as the key did.
    static let insertChallengeForActive = SQLStatement(
        """
        INSERT INTO challenges (id, client_id, created_at, expires_at)
        SELECT ?1, client_id, ?3, ?4 FROM integrations WHERE client_id = ?2 AND status = 'active' AND suspended_at IS NULL
        """)
    static let deleteChallenge = SQLStatement("DELETE FROM challenges WHERE id = ?")
    static let selectChallenge = SQLStatement("SELECT \(SQLText.list(ChallengeState.columns)) FROM challenges WHERE id = ?")
    static let consumeChallenge = SQLStatement("UPDATE challenges SET consumed_at = ? WHERE id = ? AND consumed_at IS NULL")

    // MARK: Devices and tokens

    /// A concurrent registration of the same key waits on the unique index and then inserts
    /// nothing: the loser sees `keyExists`, never a constraint error.
    static let insertDevice = SQLStatement(SQLText.insert(into: "devices", DeviceRecord.columns) + " ON CONFLICT (key_id) DO NOTHING")
    static let insertToken = SQLStatement(SQLText.insert(into: "tokens", TokenRecord.columns))
    static let deviceStatus = SQLStatement("SELECT status FROM devices WHERE key_id = ?")
    static let selectDevice = SQLStatement("SELECT \(SQLText.list(DeviceRecord.columns)) FROM devices WHERE key_id = ?")
    /// Compare-and-set on the value the assertion was verified against: of two requests racing
    /// with the same counter, exactly one changes the row.
    static let advanceCounter = SQLStatement("UPDATE devices SET counter = ?, updated_at = ? WHERE key_id = ? AND counter = ?")
    /// All but the device's newest `?2` tokens in their order of issue (the token just minted is
    /// the newest; issued_at is whole seconds and cannot order two refreshes of one second).
    static let trimTokens = SQLStatement(
        inIssueOrder: """
            DELETE FROM tokens WHERE key_id = ?1 AND token_hash NOT IN
                (SELECT token_hash FROM tokens WHERE key_id = ?1 ORDER BY \(tokensNewestFirst) LIMIT ?2)
            """)
    static let newKeyCount = SQLStatement("SELECT count(*) FROM devices WHERE client_id = ? AND created_at >= ?")
    static let selectActiveToken = SQLStatement(
        """
        SELECT \(SQLText.list(TokenRecord.columns, alias: "t"))
        FROM tokens t
        JOIN integrations i ON i.client_id = t.client_id
        LEFT JOIN devices d ON d.key_id = t.key_id
        WHERE t.token_hash = ? AND t.expires_at > ? AND i.status = 'active' AND i.suspended_at IS NULL
            AND (d.status = 'active' OR t.debug_token_id IS NOT NULL)
        """)
    static let deleteToken = SQLStatement("DELETE FROM tokens WHERE token_hash = ?")
    static let blockDevice = SQLStatement("UPDATE devices SET status = 'revoked', updated_at = ? WHERE key_id = ?")
    static let unblockDevice = SQLStatement(
        """
        UPDATE devices SET status = 'active', updated_at = ?
        WHERE key_id = ? AND status = 'revoked'
            AND client_id IN (SELECT client_id FROM integrations WHERE status = 'active')
        """)
    static let deviceAndIntegrationStatus = SQLStatement(
        "SELECT d.status, i.status FROM devices d JOIN integrations i ON i.client_id = d.client_id WHERE d.key_id = ?")
    static let deleteTokensOfDevice = SQLStatement("DELETE FROM tokens WHERE key_id = ?")
    static let liveTokenCount = SQLStatement("SELECT count(*) FROM tokens WHERE key_id = ? AND expires_at > ?")

    // MARK: Rate buckets

    /// The row exists before it is locked, so two nodes' first takes serialise on it too.
    static let createBucket = SQLStatement(
        "INSERT INTO rate_buckets (bucket, tokens, updated_at) VALUES (?, ?, ?) ON CONFLICT (bucket) DO NOTHING")
    static let lockBucket = SQLStatement("SELECT tokens, updated_at FROM rate_buckets WHERE bucket = ?", forPostgreSQL: " FOR UPDATE")
    static let updateBucket = SQLStatement("UPDATE rate_buckets SET tokens = ?, updated_at = ? WHERE bucket = ?")

    // MARK: Answers kept in memory

    /// Raises PostgreSQL's answer epoch (migration 0011); SQLite has none.
    static let raiseAnswerEpoch = SQLStatement(sqlite: "SELECT 1", postgresql: "UPDATE answer_epoch SET epoch = epoch + 1 WHERE id = 1")

    // MARK: Audit

    static let insertAudit = SQLStatement(SQLText.insert(into: "audit_log", AuditEntry.columns))
}

extension SQLTokenStore {
    /// Writes `note`'s row for `outcome`, if it records one, in the caller's transaction.
    static func audit<Outcome>(_ note: AuditNote<Outcome>?, _ outcome: Outcome, in session: any SQLSession) throws(StorageError) {
        guard let entry = note?.entry(for: outcome) else { return }
        try session.run(SharedSQL.insertAudit, entry.storedValues)
    }

    /// The integration's state as the caller's transaction sees it, its row locked by `lock`.
    static func integrationState(
        _ clientID: String, _ lock: SQLStatement, in session: any SQLSession
    ) throws(StorageError) -> IntegrationState {
        guard let row = try session.row(lock, [.text(clientID)]) else { return .missing }
        return IntegrationState(status: try row.text(0), suspended: !(try row.isNull(1)))
    }

    /// Runs `change`, one that can turn a token's 200 into a 401, in a transaction that first
    /// raises the answer epoch, and returns only once no node answers from memory what it kept
    /// before (`awaitAnswersRetired`). Raised whatever `change` finds: a retry, or a second
    /// administrator, finding the work done (a token a concurrent refresh trimmed, one the purge
    /// removed by a clock ahead of the node's) must still not return while a node serves it.
    /// First, so that revocations serialise on the epoch's row before they lock anything else.
    func retiringAnswers<T: Sendable>(_ change: (any SQLSession) throws(StorageError) -> T) throws(StorageError) -> T {
        let value = try perform(.transaction) { session throws(StorageError) -> T in
            try session.run(SharedSQL.raiseAnswerEpoch, [])
            return try change(session)
        }
        try awaitAnswersRetired()
        return value
    }

    static func insert(_ integration: IntegrationRecord, in session: any SQLSession) throws(StorageError) {
        try session.run(SharedSQL.insertIntegration, integration.storedValues)
        for bundleID in integration.bundleIDs {
            try session.run(SharedSQL.insertBundleID, [.text(integration.clientID), .text(bundleID)])
        }
    }

    static func consume(_ id: [UInt8], at time: Int64, in session: any SQLSession) throws(StorageError) -> Bool {
        try session.run(SharedSQL.consumeChallenge, [.integer(time), .blob(id)]) == 1
    }

    // MARK: ChallengeStore

    package func insertChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool {
        // Not durable: losing an issued, unused challenge to a power cut only costs the device a retry.
        try perform(.statement(durable: false)) { session throws(StorageError) -> Bool in
            try session.run(SharedSQL.insertChallengeForActive, [.blob(id), .text(clientID), .integer(createdAt), .integer(expiresAt)]) == 1
        }
    }

    package func replaceChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool {
        try perform(.transaction) { session throws(StorageError) -> Bool in
            try session.run(SharedSQL.deleteChallenge, [.blob(id)])
            return try session.run(
                SharedSQL.insertChallengeForActive, [.blob(id), .text(clientID), .integer(createdAt), .integer(expiresAt)]) == 1
        }
    }

    package func challenge(id: [UInt8]) throws(StorageError) -> ChallengeState? {
        try perform(.read) { session throws(StorageError) in try session.record(ChallengeState.self, SharedSQL.selectChallenge, [.blob(id)])
        }
    }

    package func consumeChallenge(id: [UInt8], at time: Int64) throws(StorageError) -> Bool {
        try perform(.statement) { session throws(StorageError) -> Bool in try Self.consume(id, at: time, in: session) }
    }

    // MARK: Integrations

    package func insertIntegration(_ integration: IntegrationRecord, audit: AuditNote<Void>?) throws(StorageError) {
        try perform(.transaction) { session throws(StorageError) in
            try Self.insert(integration, in: session)
            try Self.audit(audit, (), in: session)
        }
    }

    package func integration(clientID: String) throws(StorageError) -> IntegrationRecord? {
        try perform(.read) { session throws(StorageError) in
            try session.record(IntegrationRecord.self, SharedSQL.selectIntegration, [.text(clientID)])
        }
    }

    package func integrations() throws(StorageError) -> [IntegrationRecord] {
        try perform(.read) { session throws(StorageError) in try session.records(IntegrationRecord.self, SharedSQL.selectIntegrations, []) }
    }

    package func revokeIntegration(
        clientID: String, at time: Int64, audit: AuditNote<RevocationSummary>?
    ) throws(StorageError) -> RevocationSummary? {
        try retiringAnswers { session throws(StorageError) -> RevocationSummary? in
            // Locks the row first: waits for transactions holding it FOR KEY SHARE, and makes any
            // later one wait for this commit and then see 'revoked'.
            guard try Self.integrationState(clientID, SharedSQL.lockIntegrationForUpdate, in: session) != .missing else { return nil }
            let changed = try session.run(SharedSQL.revoke, [.integer(time), .text(clientID)]) == 1
            let tokens = try session.run(SharedSQL.deleteLiveTokensOfIntegration, [.text(clientID), .integer(time)])
            // Expired tokens are inert already; remove them too so nothing of the integration lingers.
            try session.run(SharedSQL.deleteTokensOfIntegration, [.text(clientID)])
            let devices = try session.run(SharedSQL.blockDevicesOfIntegration, [.integer(time), .text(clientID)])
            try session.run(SharedSQL.deleteChallengesOfIntegration, [.text(clientID)])
            let summary = RevocationSummary(changed: changed, tokensRevoked: tokens, devicesBlocked: devices)
            try Self.audit(audit, summary, in: session)
            return summary
        }
    }

    package func setSuspended(clientID: String, at time: Int64?, audit: AuditNote<Bool>?) throws(StorageError) -> Bool? {
        try retiringAnswers { session throws(StorageError) -> Bool? in
            switch try Self.integrationState(clientID, SharedSQL.lockIntegrationForUpdate, in: session) {
            case .missing: return nil
            case .revoked: return false
            case .active, .suspended:
                try session.run(SharedSQL.suspend, [SQLValue(time), .text(clientID)])
                try Self.audit(audit, true, in: session)
                return true
            }
        }
    }

    package func updatePolicy(
        clientID: String, policy: IntegrationPolicy, maxLiveTokensPerDevice: Int?, audit: AuditNote<Void>?
    ) throws(StorageError) -> Bool? {
        // A cap lets refreshes delete tokens without raising the answer epoch, so nodes keep no
        // answers of a capped integration's tokens; changing the cap raises it.
        try retiringAnswers { session throws(StorageError) -> Bool? in
            // Locked first, as a revocation does: a refresh (which holds the row FOR KEY
            // SHARE) then trims under the cap this change leaves, or commits before it.
            guard try Self.integrationState(clientID, SharedSQL.lockIntegrationForUpdate, in: session) != .missing else {
                return nil
            }
            let changed = try session.run(
                SharedSQL.updatePolicy,
                [
                    .integer(policy.requireValidReceipt ? 1 : 0), SQLValue(policy.maxRiskMetric.map(Int64.init)),
                    SQLValue(policy.maxNewKeysPerHour.map(Int64.init)), SQLValue(maxLiveTokensPerDevice.map(Int64.init)),
                    .text(clientID),
                ])
            guard changed == 1 else { return nil }
            try Self.audit(audit, (), in: session)
            return true
        }
    }
}
