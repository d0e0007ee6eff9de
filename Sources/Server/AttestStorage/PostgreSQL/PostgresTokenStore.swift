package import AttestClock
internal import Glibc
import Synchronization

/// The PostgreSQL `TokenStore`, for several attestd nodes on one database.
///
/// Every state change is one transaction at READ COMMITTED, and every decision that two nodes
/// could race on is a compare-and-set the database arbitrates: `UPDATE ... WHERE consumed_at IS
/// NULL` (PostgreSQL re-checks the condition on the newest row version after waiting for a
/// concurrent writer, so exactly one of two racers changes the row), `UPDATE ... WHERE counter = $n`,
/// and `INSERT ... ON CONFLICT DO NOTHING` for a key ID. Transactions that read an integration's
/// status lock that row `FOR KEY SHARE` before anything else, so they serialise with a revocation
/// (which locks it `FOR UPDATE` first) and never deadlock with it. A deadlock or serialization failure is
/// retried. The only state kept between requests is token answers, under an answer lease that
/// every revocation waits for (`PostgresAnswerLease`): a change made through this store on
/// another node or by `attestctl` is seen by every request after it returned, and one made as
/// plain SQL (which raises the answer epoch through the triggers but does not wait) within one
/// renewal.
///
/// Round trips are the cost on this path, so the hot ones take one each: a single statement runs
/// as its own transaction (`write`), a refresh reads its integration, challenge and device in one
/// statement and commits in one (`refreshStatement`), and token lookups that arrive together
/// share one statement (`PostgresStatementGroups`).
package final class PostgresTokenStore: SQLTokenStore {
    private let pool: PostgresPool
    /// Open once the migrations ran (always, unless opened with `opening` during an outage).
    let gate = MigrationGate()
    /// Every authorize and introspect: lookups that arrive together share one statement.
    private let lookups: PostgresStatementGroups<TokenLookup, FoundToken?>
    /// Token answers kept in memory while this node's answer lease allows (attestd only:
    /// `keepAnswers`); nothing is kept until the lease is started.
    let answers: TokenLookupCache<PostgresAnswerLease>
    /// How long a revocation waits for the nodes' leases (`awaitAnswersRetired`).
    let answerTiming: AnswerLeaseTiming

    /// One token lookup: the hash, and the caller's time that decides expiry.
    struct TokenLookup: Sendable {
        var hash: [UInt8]
        var time: Int64
    }

    /// A token the lookup found, and whether its answer may be kept in memory: not when its
    /// integration caps live tokens per device, whose refreshes delete tokens without raising
    /// the answer epoch.
    struct FoundToken: Sendable, Equatable {
        var record: TokenRecord
        var keepable: Bool
    }

    /// The connection settings (the URI may hold a password: log `settings.redactedURI`).
    package var settings: PostgresSettings { pool.settings }

    /// Connects, then applies the embedded migrations under the advisory lock. Throws
    /// `unavailable` when the server cannot be reached, `migrationUnknown` when a newer binary
    /// migrated the database: the caller must refuse to start.
    package convenience init(settings: PostgresSettings, migrateAt time: Int64, report: MigrationReport? = nil) throws(StorageError) {
        self.init(unconnected: settings)
        try migrate(at: time, report: report)
    }

    /// Applies the migrations the database lacks, under the advisory lock.
    @discardableResult
    package func migrate(at time: Int64, report: MigrationReport? = nil) throws(StorageError) -> [Migration] {
        try pool.withConnection { connection throws(StorageError) in try PostgresMigrator(report: report).migrate(connection, at: time) }
    }

    /// Opens the store without migrating (attestctl): `schemaBehind` or `migrationUnknown` when
    /// the schema is not exactly this binary's; `unavailable` when the server does not answer.
    package convenience init(existing settings: PostgresSettings) throws(StorageError) {
        self.init(unconnected: settings)
        try pool.withConnection { connection throws(StorageError) in try PostgresMigrator().requireCurrent(connection) }
    }

    /// Makes the store without connecting: the first call connects (tests of an unreachable server).
    package init(
        unconnected settings: PostgresSettings, answerTiming: AnswerLeaseTiming = AnswerLeaseTiming(),
        clock: any TimerClock = SystemTimerClock()
    ) {
        let pool = PostgresPool(settings: settings)
        self.pool = pool
        self.answerTiming = answerTiming
        let gate = gate
        // The lease renews on a connection of its own: a pool busy with requests must not delay
        // it (the lease would run out just when answers from memory help most).
        var leaseSettings = settings
        leaseSettings.poolSize = 1
        let leasePool = PostgresPool(settings: leaseSettings)
        let release: @Sendable (String) -> Void = { node in
            _ = try? leasePool.withConnection { connection throws(StorageError) in try connection.query(Self.deleteLease, [.text(node)]) }
            leasePool.closeIdleConnections()
        }
        answers = TokenLookupCache(
            stamps: PostgresAnswerLease(timing: answerTiming, clock: clock, release: release) {
                node, acknowledged, lasts throws(StorageError) -> Int64 in
                try gate.require()
                let rows = try leasePool.withConnection { connection throws(StorageError) in
                    try connection.query(Self.renewLease, [.text(node), .integer(acknowledged), .integer(lasts)])
                }
                guard rows.count == 1 else { throw .statementFailed("the answer lease's renewal answered \(rows.count) rows") }
                return rows.int64(0, 0)
            })
        // One lookup statement in flight at a time: the lookups that arrive meanwhile join the
        // next, so the groups grow with the load instead of the statements, and the other
        // connections stay free for challenges, refreshes and registrations.
        lookups = PostgresStatementGroups { requests throws(StorageError) in
            let hashes = Array(Set(requests.map(\.hash)))
            let rows = try pool.withConnection { connection throws(StorageError) in
                try connection.query(Self.selectActiveTokens, [PostgresArrays.bytea(hashes), .integer(requests.map(\.time).min() ?? 0)])
            }
            var tokens: [FoundToken] = []
            for row in try rows.rows() {
                var reader = SQLRowReader(row)
                let record = try TokenRecord(row: &reader)
                let keepable = try reader.int64() == 1
                try reader.finish()
                tokens.append(FoundToken(record: record, keepable: keepable))
            }
            return Self.answers(to: requests, among: tokens)
        }
    }

    /// Each lookup's answer from the rows of a grouped statement run at the earliest caller's time:
    /// each caller's own time decides expiry, as if it had been looked up alone.
    static func answers(to requests: [TokenLookup], among tokens: [FoundToken]) -> [FoundToken?] {
        let byHash = Dictionary(tokens.map { ($0.record.tokenHash, $0) }, uniquingKeysWith: { first, _ in first })
        return requests.map { request in byHash[request.hash].flatMap { $0.record.expiresAt > request.time ? $0 : nil } }
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

    /// Transactions run again after losing to a deadlock or serialization failure (for tests).
    package var conflictsRetried: Int { conflicts.load(ordering: .relaxed) }
    private let conflicts = Atomic<Int>(0)

    /// Runs `work` (one transaction) again when it lost to a deadlock or serialization failure.
    private func retryingConflicts<T>(_ work: () throws(StorageError) -> T) throws(StorageError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            do throws(StorageError) {
                return try work()
            } catch  where error.code == .conflict && attempt <= Self.conflictRetries {
                conflicts.add(1, ordering: .relaxed)
                continue
            }
        }
    }

    package func perform<T: Sendable>(_ work: SQLWork, _ body: (any SQLSession) throws(StorageError) -> T) throws(StorageError) -> T {
        try gate.require()
        switch work {
        case .read:
            // Autocommit: each statement sees the last committed state.
            return try pool.withConnection { connection throws(StorageError) -> T in try body(PostgresSession(connection: connection)) }
        case .snapshot:
            return try transaction(isolation: "REPEATABLE READ") { connection throws(StorageError) -> T in
                try body(PostgresSession(connection: connection))
            }
        case .statement:
            return try write { connection throws(StorageError) -> T in try body(PostgresSession(connection: connection)) }
        case .transaction:
            return try transaction { connection throws(StorageError) -> T in try body(PostgresSession(connection: connection)) }
        }
    }

    /// Runs one writing statement as its own transaction (autocommit): one round trip where
    /// BEGIN and COMMIT around it would cost three. Retried on `conflict` like a transaction.
    @discardableResult
    private func write<T>(_ body: (PostgresConnection) throws(StorageError) -> T) throws(StorageError) -> T {
        try retryingConflicts { () throws(StorageError) -> T in try pool.withConnection(body) }
    }

    // MARK: What only PostgreSQL does

    /// The three reads of a refresh in one statement: each record a derived table of at most one
    /// row, left-joined to one row so that a missing record is a run of NULLs.
    private static let selectRefreshInputs = """
        SELECT i.*, c.*, d.* FROM (SELECT 1) one
        LEFT JOIN (\(SharedSQL.selectIntegration.postgresql)) i ON true
        LEFT JOIN (SELECT \(SQLText.list(ChallengeState.columns)) FROM challenges WHERE id = $2) c ON true
        LEFT JOIN (SELECT \(SQLText.list(DeviceRecord.columns)) FROM devices WHERE key_id = $3) d ON true
        """

    package func refreshInputs(clientID: String, challengeID: [UInt8], keyID: [UInt8]) throws(StorageError) -> RefreshInputs {
        try gate.require()
        let rows = try pool.withConnection { connection throws(StorageError) in
            try connection.query(Self.selectRefreshInputs, [.text(clientID), .blob(challengeID), .blob(keyID)]).rows()
        }
        guard rows.count == 1, let row = rows.first else { throw .statementFailed("the refresh inputs came back as \(rows.count) rows") }
        var reader = SQLRowReader(row)
        let integration = try Self.optional(IntegrationRecord.self, columns: IntegrationRecord.columns.count + 1, &reader)
        let challenge = try Self.optional(ChallengeState.self, columns: ChallengeState.columns.count, &reader)
        let device = try Self.optional(DeviceRecord.self, columns: DeviceRecord.columns.count, &reader)
        try reader.finish()
        return RefreshInputs(integration: integration, challenge: challenge, device: device)
    }

    /// The record in the reader's next `columns`, or nil (and the columns skipped) when its first
    /// column, a key, is NULL: the left join found no row.
    private static func optional<Record: DecodableRecord>(
        _ type: Record.Type, columns: Int, _ reader: inout SQLRowReader
    ) throws(StorageError) -> Record? {
        guard !(try reader.nextIsNull()) else {
            reader.skip(columns)
            return nil
        }
        return try Record(row: &reader)
    }

    /// The refresh transaction as one statement, so one round trip and one transaction, with the
    /// shared (SQLite) implementation's steps in the same order:
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
    ///    live tokens per device, deletes all but the newest N - 1 of the device's earlier tokens
    ///    by their order of issue, `seq` (the new one, not yet visible to the statement, always
    ///    stays; `SQLText.issueOrder`);
    /// 5. `unretiring` says that the statement's deletions retire nothing when the integration,
    ///    as locked in 1, has a cap (no node keeps a capped integration's tokens; a change of the
    ///    cap locks the row FOR UPDATE first), so the trigger raises no answer epoch for the trim
    ///    (migration 0011); the last column reads it, so it always runs before the trigger fires.
    private static let refreshStatement = """
        WITH integration AS MATERIALIZED (
            SELECT status, suspended_at, max_live_tokens_per_device FROM integrations WHERE client_id = $8 FOR KEY SHARE
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
            INSERT INTO tokens (\(SQLText.list(TokenRecord.columns)))
            SELECT $7::bytea, $8::text, $9::text, key_id, $10::text, $11::bigint, $12::bigint, NULL::text FROM advanced
            RETURNING key_id
        ), unretiring AS MATERIALIZED (
            SELECT set_config('attestd.deletions_retire_nothing',
                CASE WHEN (SELECT max_live_tokens_per_device FROM integration) IS NOT NULL THEN 'on' ELSE 'off' END, true) AS setting
        ), trimmed AS (
            DELETE FROM tokens WHERE key_id = $1 AND $6::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM minted)
                AND token_hash NOT IN
                    (SELECT token_hash FROM tokens WHERE key_id = $1
                        ORDER BY \(SQLText.issueOrder(in: SharedSQL.tokensNewestFirst, for: .postgresql)) LIMIT $6::bigint - 1)
        )
        SELECT (SELECT count(*) FROM consumed), (SELECT status FROM integration), (SELECT suspended_at FROM integration),
            (SELECT count(*) FROM minted), (SELECT setting FROM unretiring)
        """

    package func advanceCounter(
        keyID: [UInt8], from previous: UInt32, to counter: UInt32, at time: Int64, token: TokenRecord,
        consumingChallenge challengeID: [UInt8], keepingLatest: Int?
    ) throws(StorageError) -> CounterAdvance {
        try gate.require()
        let rows = try write { connection throws(StorageError) in
            try connection.query(
                Self.refreshStatement,
                [
                    .blob(keyID), .integer(Int64(previous)), .integer(Int64(counter)), .integer(time), .blob(challengeID),
                    SQLValue(keepingLatest.map(Int64.init)), .blob(token.tokenHash), .text(token.clientID),
                    .text(token.workspaceID), .text(token.scope), .integer(token.issuedAt), .integer(token.expiresAt),
                ]
            ).rows()
        }
        guard rows.count == 1, let row = rows.first else { throw .statementFailed("the refresh statement answered \(rows.count) rows") }
        guard try row.int64(0) == 1 else { return .challengeUsed }
        switch IntegrationState(status: try row.optionalText(1), suspended: !(try row.isNull(2))) {
        case .active: break
        case .suspended: return .integrationSuspended
        case .revoked, .missing: return .integrationRevoked
        }
        if try row.int64(3) == 1 { return .advanced }
        // The compare-and-set changed nothing: the device's row as it is now says why.
        let status = try perform(.read) { session throws(StorageError) in try session.row(SharedSQL.deviceStatus, [.blob(keyID)]) }
        return try status?.text(0) == DeviceStatus.active.rawValue ? .counterChanged : .deviceBlocked
    }

    package func activeToken(hash: [UInt8], at time: Int64) throws(StorageError) -> TokenRecord? {
        try gate.require()
        switch answers.answer(hash: hash, at: time) {
        case .kept(let record):
            return record
        case .missed(let miss):
            let found = try lookups.submit(TokenLookup(hash: hash, time: time))
            if let found, found.keepable { answers.keep(found.record, hash: hash, after: miss) }
            return found?.record
        }
    }

    package func activeToken(
        hash: [UInt8], at time: Int64, then reply: @escaping @Sendable (Result<TokenRecord?, StorageError>) -> Void
    ) {
        do throws(StorageError) {
            try gate.require()
        } catch {
            return reply(.failure(error))
        }
        switch answers.answer(hash: hash, at: time) {
        case .kept(let record):
            reply(.success(record))
        case .missed(let miss):
            lookups.submit(TokenLookup(hash: hash, time: time)) { [answers] result in
                if case .success(let found?) = result, found.keepable { answers.keep(found.record, hash: hash, after: miss) }
                reply(result.map { $0?.record })
            }
        }
    }

    /// Token lookups answered from this node's memory since the store opened (for tests).
    package var lookupsFromMemory: Int { answers.hits.load(ordering: .relaxed) }

    /// Starts this node's answer lease (attestd): token answers are kept in memory from its
    /// first renewal on, and every revocation waits for the lease to acknowledge it.
    package func keepAnswers() { answers.stamps.start() }

    /// Renews node `$1`'s lease for `$3` milliseconds of the database's clock, acknowledging
    /// epoch `$2`, and answers the current epoch (read when the statement began).
    private static let renewLease = """
        INSERT INTO answer_leases (node, acked_epoch, expires_at)
        VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 millisecond')
        ON CONFLICT (node) DO UPDATE SET acked_epoch = excluded.acked_epoch, expires_at = excluded.expires_at
        RETURNING (SELECT epoch FROM answer_epoch WHERE id = 1)
        """

    /// Node `$1`'s lease, and those of nodes that died an hour ago or more (long expired, never
    /// waited for), at a clean stop: nothing at start, where the database may not answer yet.
    private static let deleteLease = "DELETE FROM answer_leases WHERE node = $1 OR expires_at < clock_timestamp() - interval '1 hour'"

    /// The unexpired leases that have not acknowledged the current answer epoch (`<>`, not `<`:
    /// after a restore or a promotion the epoch can be lower than a lease's last acknowledgement).
    private static let unacknowledgedLeases = """
        SELECT count(*) FROM answer_leases
        WHERE acked_epoch <> (SELECT epoch FROM answer_epoch WHERE id = 1) AND expires_at > clock_timestamp()
        """

    /// Returns once every unexpired answer lease has acknowledged the answer epoch as it is now
    /// (raised by the triggers of the changes committed before): a running node within about
    /// one renewal, a node that died within what was left of its lease.
    package func awaitAnswersRetired() throws(StorageError) {
        let started = ContinuousClock.now
        while true {
            let waiting = try pool.withConnection { connection throws(StorageError) in
                try connection.query(Self.unacknowledgedLeases)
            }.int64(0, 0)
            if waiting == 0 { return }
            guard ContinuousClock.now - started < answerTiming.waitLimit else {
                throw .unavailable(
                    "the change is committed, but \(waiting) attestd node(s) did not confirm within \(answerTiming.waitLimit) "
                        + "that they stopped answering from memory what it revoked; their leases expire by themselves")
            }
            usleep(5_000)
        }
    }

    /// The active tokens among the hashes `$1` (a `BYTEA[]`) that expire after `$2`: the token's
    /// integration active and not suspended, its device active (a debug token's has none: revoking
    /// the debug token deletes them); and whether its answer may be kept (`FoundToken`).
    private static let selectActiveTokens = """
        SELECT \(SQLText.list(TokenRecord.columns, alias: "t")),
            CASE WHEN i.max_live_tokens_per_device IS NULL THEN 1 ELSE 0 END::bigint
        FROM tokens t
        JOIN integrations i ON i.client_id = t.client_id
        LEFT JOIN devices d ON d.key_id = t.key_id
        WHERE t.token_hash = ANY ($1) AND t.expires_at > $2 AND i.status = 'active' AND i.suspended_at IS NULL
            AND (d.status = 'active' OR t.debug_token_id IS NOT NULL)
        """

    private static let statistics = SQLStatement(
        """
        SELECT (SELECT count(*) FROM integrations WHERE status = 'active'),
               (SELECT count(*) FROM devices WHERE status = 'active'),
               (SELECT count(*) FROM integrations WHERE status = 'revoked'),
               (SELECT count(*) FROM integrations WHERE status = 'active' AND suspended_at IS NOT NULL),
               pg_database_size(current_database())
        """)

    package func statistics() throws(StorageError) -> StoreStatistics {
        try StoreStatistics(row: try perform(.read) { session throws(StorageError) in try session.row(Self.statistics, []) })
    }

    package func backup(to path: String) throws(StorageError) {
        let snapshot = try snapshot(at: 0)
        let copy = try SQLiteTokenStore(path: path, readerCount: 1, migrateAt: 0)
        try copy.restore(snapshot)
        try copy.close()
    }

    package func close() throws(StorageError) {
        answers.stamps.stop(timeout: answerTiming.stopWait)
        gate.stop()
        pool.closeIdleConnections()
    }

    package func checkIntegrity() throws(StorageError) { try checkAvailable() }

    package var poolStatistics: PoolStatistics? { pool.statistics }

    /// Checks that the server answers (`/readyz`).
    package func checkAvailable() throws(StorageError) {
        try perform(.read) { session throws(StorageError) in _ = try session.rows(SQLStatement("SELECT 1"), []) }
    }
}
