import Synchronization

/// The SQLite `TokenStore`: one writer connection behind a mutex (SQLite has one writer anyway)
/// and a few reader connections for lookups, which WAL lets run beside the writer. The
/// operations are `SQLTokenStore`'s, shared with PostgreSQL; this type says how work gets a
/// connection and a transaction, and does what only SQLite does (the checkpoint at a clean
/// stop, `quick_check`, the file's size).
package final class SQLiteTokenStore: SQLTokenStore {
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

        /// `use`, or nil at once when another thread holds the connection.
        func useIfFree<T: Sendable>(_ body: (SQLiteDatabase) throws(StorageError) -> T) throws(StorageError) -> T? {
            try lock.withLockIfAvailable { _ throws(StorageError) -> T in try body(database) }
        }
    }

    private let writer: Connection
    /// Write transactions, committed in groups on `writer`.
    private let commits: SQLiteGroupCommit
    /// Checkpoints the log on its own thread and connection, in place of the writer.
    private let checkpointer: SQLiteCheckpointer
    private let readers: [Connection]
    private let nextReader = Atomic<Int>(0)
    /// Repeated token lookups from memory while the database has not changed; nil when the
    /// write-ahead-log index could not be mapped (then every lookup reads the database).
    let lookups: TokenLookupCache<SQLiteChangeStamp>?
    /// The database file.
    package let path: String

    /// Opens (creating) the database, checks its integrity, and applies the embedded migrations.
    /// Throws `corrupt`, `migrationUnknown` (a newer binary wrote it) or an I/O code: the caller
    /// must refuse to start.
    package convenience init(
        path: String, readerCount: Int = 2, busyTimeout: Duration = .milliseconds(2000), migrateAt time: Int64,
        report: MigrationReport? = nil
    ) throws(StorageError) {
        let database = try SQLiteDatabase(path: path, busyTimeout: busyTimeout)
        try database.cheapCheck()
        try database.refuseIfMoved(path)
        _ = try Migrator(report: report).migrate(database, at: time)
        try self.init(writing: database, path: path, readerCount: readerCount, busyTimeout: busyTimeout, create: true)
    }

    /// Opens an existing database without creating or migrating it (attestctl): `missing` when
    /// there is no file at `path`, `schemaBehind` or `migrationUnknown` when its schema is not
    /// exactly this binary's, `moved` when `store copy` moved it (unless `allowingMoved`: the
    /// source of another copy).
    package convenience init(
        existingAt path: String, readerCount: Int = 1, busyTimeout: Duration = .milliseconds(5000), allowingMoved: Bool = false
    ) throws(StorageError) {
        guard FileSize.exists(path) else {
            throw .missing("there is no database at \(path); attestd creates it when it first starts (check --db or ATTESTD_DB)")
        }
        let database = try SQLiteDatabase(path: path, busyTimeout: busyTimeout, create: false)
        try database.cheapCheck()
        if !allowingMoved { try database.refuseIfMoved(path) }
        try Migrator().requireCurrent(database)
        try self.init(writing: database, path: path, readerCount: readerCount, busyTimeout: busyTimeout, create: false)
    }

    /// The store around `database`, checked and at this binary's schema: its writer, with the
    /// lookups' cache, the checkpointer and `readerCount` readers beside it.
    private init(writing database: SQLiteDatabase, path: String, readerCount: Int, busyTimeout: Duration, create: Bool) throws(StorageError)
    {
        self.path = path
        lookups = SQLiteChangeStamp(database).map { TokenLookupCache(stamps: $0) }
        checkpointer = try SQLiteCheckpointer(path: path, busyTimeout: busyTimeout)
        checkpointer.attach(to: database)
        writer = Connection(database)
        commits = SQLiteGroupCommit(writer: writer)
        var readers: [Connection] = []
        for _ in 0..<max(1, readerCount) {
            readers.append(Connection(try SQLiteDatabase(path: path, busyTimeout: busyTimeout, create: create)))
        }
        self.readers = readers
    }

    // MARK: Plumbing

    package func perform<T: Sendable>(_ work: SQLWork, _ body: (any SQLSession) throws(StorageError) -> T) throws(StorageError) -> T {
        switch work {
        case .read:
            return try read { database throws(StorageError) -> T in try body(SQLiteSession(database: database)) }
        case .snapshot:
            // On a reader, in one read transaction: the reads see one state, and the writer (every
            // device's challenge, attestation and refresh) never waits for an administrator's read.
            return try read { database throws(StorageError) -> T in
                try database.readTransaction { () throws(StorageError) -> T in try body(SQLiteSession(database: database)) }
            }
        case .statement(let durable), .transaction(let durable):
            return try write(durable: durable) { database throws(StorageError) -> T in try body(SQLiteSession(database: database)) }
        }
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction on the writer connection, grouped with the
    /// transactions of other threads that wait for the same commit (`SQLiteGroupCommit`).
    ///
    /// `durable: false` commits with `synchronous=NORMAL` (in WAL mode: safe against a process
    /// crash, but a power loss may drop the last commits) unless a durable transaction shares its
    /// group. Only for rows whose loss is harmless (an issued, unused challenge); every security
    /// decision commits with `synchronous=FULL`.
    private func write<T: Sendable>(durable: Bool, _ body: (SQLiteDatabase) throws(StorageError) -> T) throws(StorageError) -> T {
        do {
            let value = try commits.run(durable: durable, body)
            failingWrites.withLock { $0 = nil }
            return value
        } catch {
            // Why: reads go on when the disk is full, so readiness must hear of failing writes.
            if [.full, .io, .readOnly].contains(error.code) { failingWrites.withLock { $0 = error } }
            throw error
        }
    }

    /// Groups committed and the write transactions they carried since the store opened.
    package var groupCommitStatistics: (groups: Int, transactions: Int) {
        let counts = commits.statistics
        return (counts.groups, counts.members)
    }

    /// The last write's failure for want of disk or of write access, until a write succeeds.
    private let failingWrites = Mutex<StorageError?>(nil)

    /// A write that needs room on disk and leaves nothing: a 64 KiB probe row in and out of
    /// `rate_buckets` in one transaction (new pages, in the database and its write-ahead log).
    private static let probe = SQLStatement(
        "INSERT OR REPLACE INTO rate_buckets (bucket, tokens, updated_at) VALUES ('readiness-probe ' || printf('%.*c', 65536, 'x'), 0, 0)")
    private static let unprobe = SQLStatement("DELETE FROM rate_buckets WHERE bucket LIKE 'readiness-probe %'")

    /// Caps the database at `pages` pages on the writer (`PRAGMA max_page_count`), for tests of a
    /// full disk: past it every write fails with SQLITE_FULL, as on a full file system.
    package func limitPagesForTesting(_ pages: Int) throws(StorageError) {
        try writer.use { database throws(StorageError) in try database.execute("PRAGMA max_page_count = \(pages)") }
    }

    /// The writer's current `PRAGMA synchronous` (2 = FULL), for tests of the durability rule.
    package func writerSynchronousSetting() throws(StorageError) -> Int64 {
        try writer.use { database throws(StorageError) -> Int64 in
            guard let row = try SQLiteSession(database: database).row(SQLStatement("PRAGMA synchronous"), []) else {
                throw .statementFailed("PRAGMA synchronous answered no row")
            }
            return try row.int64(0)
        }
    }

    /// Runs `body` on a free reader connection, trying each once from the next in turn, or waits
    /// for that next one when all are busy (autocommit reads see the last committed state).
    /// Trying first keeps two workers from queueing on one reader while another sits idle.
    private func read<T: Sendable>(_ body: (SQLiteDatabase) throws(StorageError) -> T) throws(StorageError) -> T {
        let start = abs(nextReader.wrappingAdd(1, ordering: .relaxed).oldValue % readers.count)
        for offset in 0..<readers.count {
            if let value = try readers[(start + offset) % readers.count].useIfFree(body) { return value }
        }
        return try readers[start].use(body)
    }

    // MARK: What only SQLite does

    /// Token lookups answered from memory since the store opened (for tests and the benchmark).
    package var lookupsFromMemory: Int { lookups?.hits.load(ordering: .relaxed) ?? 0 }

    /// The unexpired token with this hash whose integration is active and device not blocked:
    /// from memory while nothing has committed since it was read (`TokenLookupCache`), else one
    /// statement on a reader.
    package func activeToken(hash: [UInt8], at time: Int64) throws(StorageError) -> TokenRecord? {
        guard let lookups else { return try storedActiveToken(hash: hash, at: time) }
        return try lookups.activeToken(hash: hash, at: time) { () throws(StorageError) -> TokenRecord? in
            try storedActiveToken(hash: hash, at: time)
        }
    }

    /// Nothing to wait for: every commit retires what `lookups` kept.
    package func awaitAnswersRetired() throws(StorageError) {}

    package func backup(to path: String) throws(StorageError) {
        // On a reader: VACUUM INTO reads one snapshot of the database while writers go on.
        try perform(.read) { session throws(StorageError) in _ = try session.rows(SQLStatement("VACUUM INTO ?"), [.text(path)]) }
    }

    package func close() throws(StorageError) {
        // Holding the checkpointer: a passive checkpoint running there would make this one busy.
        try checkpointer.holding { () throws(StorageError) in try truncateLog() }
    }

    private func truncateLog() throws(StorageError) {
        try writer.use { database throws(StorageError) in
            // TRUNCATE: every page of the log goes into the file and the log is cut to zero bytes,
            // so a copy of the .sqlite file alone holds everything (docs/OPERATIONS.md, backups).
            guard let row = try SQLiteSession(database: database).row(SQLStatement("PRAGMA wal_checkpoint(TRUNCATE)"), []),
                try row.int64(0) == 0
            else {
                throw .busy("the write-ahead log could not be checkpointed: another connection is reading")
            }
        }
    }

    /// Checkpoints completed off the writer since the store opened (for tests).
    package var checkpointsOffTheWriter: Int { checkpointer.checkpoints }

    /// Returns once every checkpoint scheduled so far has run (for tests).
    package func finishCheckpoints() { checkpointer.drain() }

    /// Runs `body` while no checkpoint runs (for tests: the log then grows past the threshold).
    package func holdingCheckpoints<T: Sendable>(_ body: () throws(StorageError) -> T) throws(StorageError) -> T {
        try checkpointer.holding(body)
    }

    /// Rows one purge transaction deletes at most: every write waits for it on the one writer.
    /// A deleted token dirties about two pages (its row and its device's index entry, both at
    /// random places), and the commit writes them to the log: on a large table a batch the size
    /// of PostgreSQL's held the writer many times longer (docs/BENCHMARKS.md).
    package static var purgeBatch: Int { 256 }

    /// Nil: SQLite has one writer connection and a few readers, no pool.
    package var poolStatistics: PoolStatistics? { nil }

    /// Nil: one node owns a SQLite database, so its clock is the only one.
    package func databaseTime() throws(StorageError) -> Double? { nil }

    /// The newest token's issue time: tokens is a rowid table in order of issue, so one step.
    package func recordedTime() throws(StorageError) -> RecordedTime? {
        let row = try perform(.read) { session throws(StorageError) in
            try session.row(SQLStatement("SELECT issued_at FROM tokens ORDER BY seq DESC LIMIT 1"), [])
        }
        return RecordedTime(newestIssue: try row?.int64(0))
    }

    /// Marks this file moved to `target` by `store copy` (`SQLiteMovedMark`): nothing opens it
    /// for use again.
    package func markMoved(to target: String, by actor: String, at time: Int64, detail: String) throws(StorageError) {
        try writer.use { database throws(StorageError) in try database.markMoved(to: target, by: actor, at: time, detail: detail) }
    }

    package func checkIntegrity() throws(StorageError) {
        try writer.use { database throws(StorageError) in try database.quickCheck() }
    }

    /// Reads, and after a write failed for want of disk or write access (which reads do not
    /// notice), writes a probe: ready again only once writes succeed.
    package func checkAvailable() throws(StorageError) {
        try perform(.read) { session throws(StorageError) in _ = try session.rows(SQLStatement("SELECT 1"), []) }
        guard failingWrites.withLock({ $0 }) != nil else { return }
        try perform(.transaction) { session throws(StorageError) in
            try session.run(Self.probe, [])
            try session.run(Self.unprobe, [])
        }
    }

    private static let statistics = SQLStatement(
        """
        SELECT (SELECT count(*) FROM integrations WHERE status = 'active'),
               (SELECT count(*) FROM devices WHERE status = 'active'),
               (SELECT count(*) FROM integrations WHERE status = 'revoked'),
               (SELECT count(*) FROM integrations WHERE status = 'active' AND suspended_at IS NOT NULL),
               (SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size())
        """)

    package func statistics() throws(StorageError) -> StoreStatistics {
        let row = try perform(.read) { session throws(StorageError) in try session.row(Self.statistics, []) }
        // The WAL's bytes too: until a checkpoint, part of the database is only there.
        return try StoreStatistics(row: row, extraBytes: FileSize.of(path + "-wal"))
    }
}
