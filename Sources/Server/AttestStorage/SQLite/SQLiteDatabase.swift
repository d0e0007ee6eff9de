internal import CSQLite

/// One SQLite connection: the only owner of its `sqlite3*`, closed in `deinit`.
///
/// Opening sets WAL, `synchronous=FULL`, foreign keys and a busy timeout. Reads may run anywhere;
/// every write runs inside `immediateTransaction`, and a statement that writes outside it is
/// refused. Not `Sendable`: one thread of control uses a connection at a time (wrap it in a
/// `Mutex` to share it).
package final class SQLiteDatabase {
    /// How long a connection waits for another connection's lock before failing with `busy`.
    package static let defaultBusyTimeout: Duration = .milliseconds(5000)

    /// The file this connection opened.
    package let path: String
    /// The raw connection, for this module's statements and error mapping only.
    let handle: OpaquePointer
    private var isInImmediateTransaction = false
    /// Statements prepared once per connection and reused (`cachedStatement`).
    private var statementCache: [String: SQLiteStatement] = [:]
    /// The closure `onCommit` installed, retained for SQLite (which holds only its pointer).
    private var commitHook: Unmanaged<CommitHook>?

    /// Opens the database file at `path` (creating it when `create`) and configures the connection.
    ///
    /// Throws `corrupt` when the file is not a database, `io` when it cannot be opened (or does
    /// not exist and `create` is false), and `busy` when another connection holds a lock past
    /// `busyTimeout` while WAL is switched on.
    package init(path: String, busyTimeout: Duration = SQLiteDatabase.defaultBusyTimeout, create: Bool = true) throws(StorageError) {
        var connection: OpaquePointer?
        _ = Self.configured
        // EXRESCODE: failures report extended codes (e.g. SQLITE_CONSTRAINT_UNIQUE) from the start.
        // NOMUTEX: the type is not Sendable, so one thread uses a connection at a time and SQLite's
        // own per-connection mutex would only cost a lock and an unlock per call.
        let flags =
            SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_NOMUTEX
        let result = sqlite3_open_v2(path, &connection, flags, nil)
        guard result == SQLITE_OK, let connection else {
            let error = StorageError.sqlite(result, "open", connection: connection)
            // sqlite3_open_v2 usually allocates a handle even when it fails; close_v2(nil) is a no-op.
            _ = sqlite3_close_v2(connection)
            throw error
        }
        self.path = path
        self.handle = connection
        // From here on a throw releases self, and deinit closes the connection.
        try configure(busyTimeout: busyTimeout)
    }

    /// SQLite's process-wide settings, applied once before the first connection opens.
    private static let configured: Bool = CSQLite_disable_memory_statistics() == SQLITE_OK

    deinit {
        // close_v2 always returns SQLITE_OK for a valid handle. Statements of callers hold a
        // strong reference to their database, so none is still alive here; the cached ones are
        // finalized just after, when the cache goes (close_v2 closes once the last is finalized).
        let result = sqlite3_close_v2(handle)
        assert(result == SQLITE_OK, "sqlite3_close_v2 returned \(result)")
        commitHook?.release()
    }

    private func configure(busyTimeout: Duration) throws(StorageError) {
        let (seconds, attoseconds) = busyTimeout.components
        let milliseconds = Int32(clamping: max(0, seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000))
        let result = sqlite3_busy_timeout(handle, milliseconds)
        guard result == SQLITE_OK else { throw .sqlite(result, "set busy timeout", connection: handle) }

        // Why WAL: readers never block the writer and the writer never blocks readers.
        let mode = try prepare("PRAGMA journal_mode=WAL")
        let switched = try mode.step() ? mode.string(at: 0) : nil
        guard switched?.lowercased() == "wal" else {
            throw .io("could not switch to WAL (journal mode is \(switched ?? "unknown"))")
        }
        // Why FULL: a committed token or consumed challenge survives power loss, not just a crash.
        try execute("PRAGMA synchronous=FULL")
        try execute("PRAGMA foreign_keys=ON")
    }

    /// True while `immediateTransaction` is running its body on this connection.
    package var isInTransaction: Bool { isInImmediateTransaction }

    /// Whether a writing statement may run now: only inside a live immediate transaction.
    var allowsWrites: Bool {
        isInImmediateTransaction && sqlite3_get_autocommit(handle) == 0
    }

    /// The number of rows the most recent INSERT, UPDATE or DELETE changed.
    package var changes: Int { Int(sqlite3_changes64(handle)) }

    // MARK: Statements

    /// Prepares one SQL statement (trailing whitespace and comments allowed).
    ///
    /// Transaction control (BEGIN, COMMIT, END, ROLLBACK, SAVEPOINT, RELEASE) is refused with
    /// `misuse`: `immediateTransaction` owns the transaction. PRAGMAs may run anywhere (SQLite
    /// counts even reading `PRAGMA busy_timeout` as a write).
    package func prepare(_ sql: String) throws(StorageError) -> SQLiteStatement {
        let bytes = Array(sql.utf8)
        let (statement, next) = try prepareNext(bytes, from: 0)
        guard let statement else { throw .misuse("prepare was given no SQL statement") }
        let (extra, _) = try prepareNext(bytes, from: next)
        guard extra == nil else { throw .misuse("prepare takes one statement; use execute for scripts") }
        return statement
    }

    /// A prepared statement for `sql`, compiled on first use and reused afterwards (rewound; bind
    /// all parameters again). For the fixed statements of a store, not for ad-hoc SQL.
    package func cachedStatement(_ sql: String) throws(StorageError) -> SQLiteStatement {
        if let statement = statementCache[sql] {
            statement.rewind()
            return statement
        }
        let statement = try prepare(sql)
        statement.moveIntoCache()
        statementCache[sql] = statement
        return statement
    }

    /// Runs a script of one or more statements, discarding any rows.
    package func execute(_ sql: String) throws(StorageError) {
        let bytes = Array(sql.utf8)
        var offset = 0
        while offset < bytes.count {
            let (statement, next) = try prepareNext(bytes, from: offset)
            offset = next
            try statement?.run()
        }
    }

    /// Runs one statement with `arguments` bound to its parameters 1...n, discarding any rows.
    package func execute(_ sql: String, arguments: [SQLValue]) throws(StorageError) {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        try statement.run()
    }

    /// Compiles the first statement of `bytes[offset...]`; returns it (nil for only whitespace or
    /// comments) and the offset just past it.
    private func prepareNext(_ bytes: [UInt8], from offset: Int) throws(StorageError) -> (SQLiteStatement?, Int) {
        guard offset < bytes.count else { return (nil, offset) }
        guard let length = Int32(exactly: bytes.count - offset) else { throw .misuse("SQL text is too long") }
        var raw: OpaquePointer?
        var consumed = 0
        let result = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                // Non-empty: offset < bytes.count was checked above.
                guard let base = chars.baseAddress else { return SQLITE_MISUSE }
                let start = base + offset
                var tail: UnsafePointer<CChar>?
                let result = sqlite3_prepare_v2(handle, start, length, &raw, &tail)
                consumed = tail.map { $0 - start } ?? Int(length)
                return result
            }
        }
        guard result == SQLITE_OK else {
            let error = StorageError.sqlite(result, "prepare", connection: handle)
            _ = sqlite3_finalize(raw)  // nil on failure; finalize(nil) is a no-op
            throw error
        }
        let next = offset + max(consumed, 1)
        guard let raw else { return (nil, next) }
        let keyword = SQLiteDatabase.firstKeyword(bytes[offset..<next])
        // PRAGMA and VACUUM (`VACUUM INTO`, the online backup) are control statements that run
        // outside any transaction (VACUUM refuses to run inside one): the write rule does not apply.
        let statement = SQLiteStatement(database: self, handle: raw, isControl: keyword == "PRAGMA" || keyword == "VACUUM")
        if ["BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"].contains(keyword) {
            throw .misuse("transaction control statements are reserved to immediateTransaction")
        }
        return (statement, next)
    }

    /// The statement's first keyword, upper-cased ("" when it starts with something else).
    static func firstKeyword(_ sql: ArraySlice<UInt8>) -> String {
        var rest = sql
        // Skip whitespace and comments, as SQLite's tokenizer does before the first keyword.
        while let first = rest.first {
            if first == 0x20 || (0x09...0x0D).contains(first) {
                rest = rest.dropFirst()
            } else if rest.starts(with: "--".utf8) {
                rest = rest.drop { $0 != 0x0A }
            } else if rest.starts(with: "/*".utf8) {
                rest = rest.dropFirst(2)
                while !rest.isEmpty, !rest.starts(with: "*/".utf8) { rest = rest.dropFirst() }
                rest = rest.dropFirst(2)
            } else {
                break
            }
        }
        let word = rest.prefix { (0x61...0x7A).contains($0 | 0x20) }
        return String(decoding: word, as: UTF8.self).uppercased()
    }

    /// The first region of the write-ahead-log index as this connection maps it (the header is
    /// at its start), or nil when the database is not in WAL mode or has no index yet.
    func walIndex() -> UnsafeRawPointer? {
        CSQLite_wal_index(handle).map { UnsafeRawPointer($0) }
    }

    // MARK: Checkpoints

    /// Calls `body` after each commit on this connection with the number of pages in the
    /// write-ahead log (`sqlite3_wal_hook`), in place of SQLite's automatic checkpoint: when
    /// `body` answers true, a passive checkpoint runs here, on the committing thread, as the
    /// automatic one did; otherwise `body` must only note the number and return.
    func onCommit(_ body: @escaping @Sendable (Int) -> Bool) {
        let hook = Unmanaged.passRetained(CommitHook(body))
        _ = sqlite3_wal_hook(
            handle,
            { context, connection, _, pages in
                guard let context else { return SQLITE_OK }
                if Unmanaged<CommitHook>.fromOpaque(context).takeUnretainedValue().body(Int(pages)) {
                    // As SQLite's own hook: a failure (another connection checkpointing) leaves
                    // the log as it is, and the commit has happened either way.
                    _ = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                }
                return SQLITE_OK
            }, hook.toOpaque())
        commitHook?.release()
        commitHook = hook
    }

    /// A passive checkpoint (`sqlite3_wal_checkpoint_v2`, `SQLITE_CHECKPOINT_PASSIVE`): copies
    /// into the database file what of the log no reader still needs, without waiting for any
    /// lock or blocking any writer.
    func checkpointPassively() throws(StorageError) {
        let result = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        guard result == SQLITE_OK else { throw .sqlite(result, "checkpoint", connection: handle) }
    }

    // MARK: Transactions

    /// Runs `body` inside `BEGIN IMMEDIATE` ... `COMMIT`: the only way to write.
    ///
    /// Why IMMEDIATE: the write lock is taken before the first read, so a read-then-write never
    /// fails with SQLITE_BUSY_SNAPSHOT, and waiting for another writer honours the busy timeout.
    /// Any error thrown by `body` or by COMMIT rolls everything back and is rethrown unchanged.
    /// Nesting throws `misuse`; a writer elsewhere past the busy timeout throws `busy`.
    @discardableResult
    package func immediateTransaction<T>(_ body: () throws -> T) throws -> T {
        guard !isInImmediateTransaction, sqlite3_get_autocommit(handle) != 0 else {
            throw StorageError.misuse("immediateTransaction cannot be nested")
        }
        isInImmediateTransaction = true
        defer { isInImmediateTransaction = false }
        return try transaction("BEGIN IMMEDIATE", body)
    }

    /// Runs `body`'s reads inside `BEGIN` ... `COMMIT` (a read transaction on a reader
    /// connection): they see one state of the database, and no writer waits for them (WAL).
    package func readTransaction<T>(_ body: () throws(StorageError) -> T) throws(StorageError) -> T {
        guard sqlite3_get_autocommit(handle) != 0 else { throw StorageError.misuse("readTransaction cannot be nested") }
        do {
            return try transaction("BEGIN", body)
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError.misuse("a read transaction threw \(error)")
        }
    }

    /// `begin`, `body`, COMMIT; any error of `body` or COMMIT rolls back and is rethrown unchanged.
    private func transaction<T>(_ begin: String, _ body: () throws -> T) throws -> T {
        try control(begin)
        let value: T
        do {
            value = try body()
            try control("COMMIT")
        } catch {
            rollBack()
            throw error
        }
        return value
    }

    /// Runs `bodies` in one `BEGIN IMMEDIATE` ... `COMMIT`, each inside its own savepoint: a body
    /// that throws is rolled back to its savepoint alone and its error put in `failures` at its
    /// index, and the others go on. Throws (having rolled everything back) when BEGIN or COMMIT
    /// fails, or when a body's error made SQLite roll the whole transaction back itself (a full
    /// disk, an I/O error): then nothing of any body is written.
    func groupTransaction(
        _ bodies: [(SQLiteDatabase) throws(StorageError) -> Void], failures: inout [StorageError?]
    ) throws(StorageError) {
        guard !isInImmediateTransaction, sqlite3_get_autocommit(handle) != 0 else {
            throw .misuse("groupTransaction cannot be nested")
        }
        try control("BEGIN IMMEDIATE")
        isInImmediateTransaction = true
        defer { isInImmediateTransaction = false }
        do throws(StorageError) {
            for (index, body) in bodies.enumerated() {
                try control("SAVEPOINT member")
                do throws(StorageError) {
                    try body(self)
                    try control("RELEASE member")
                } catch {
                    // SQLite ended the whole transaction (e.g. SQLITE_FULL): no member can commit.
                    guard sqlite3_get_autocommit(handle) == 0 else { throw error }
                    try control("ROLLBACK TO member")
                    try control("RELEASE member")
                    failures[index] = error
                }
            }
            try control("COMMIT")
        } catch {
            rollBack()
            throw error
        }
    }

    /// Runs a transaction-control statement, bypassing the guards meant for callers.
    private func control(_ sql: String) throws(StorageError) {
        let result = sqlite3_exec(handle, sql, nil, nil, nil)
        guard result == SQLITE_OK else { throw .sqlite(result, sql, connection: handle) }
    }

    /// Rolls back the open transaction, if SQLite has not already done so itself.
    private func rollBack() {
        // SQLite rolls back on its own after some errors (SQLITE_FULL, SQLITE_IOERR, ...).
        guard sqlite3_get_autocommit(handle) == 0 else { return }
        // A failed ROLLBACK leaves the transaction open; the next immediateTransaction then
        // throws misuse rather than writing into it. The caller's error is the one reported.
        _ = try? control("ROLLBACK")
    }

    // MARK: Health

    /// Runs `PRAGMA quick_check`; throws `corrupt` with SQLite's first findings unless it says "ok".
    ///
    /// O(size of the database): run it at start-up or from an operator command, not per request.
    /// What every start runs instead of a full check, in constant time: the header and the schema
    /// must read (a file that is not a database, or whose schema pages are damaged, fails here).
    /// A full check reads every page: `quickCheck`, on request (`attestctl check`).
    package func cheapCheck() throws(StorageError) {
        let statement = try prepare("SELECT count(*) FROM sqlite_schema")
        _ = try statement.step()
    }

    /// Reads every page (PRAGMA quick_check): time grows with the database.
    package func quickCheck() throws(StorageError) {
        let statement = try prepare("PRAGMA quick_check")
        var findings: [String] = []
        while try statement.step() {
            findings.append(statement.string(at: 0) ?? "")
        }
        guard findings != ["ok"] else { return }
        // quick_check rows can span lines ("*** in database main ***\nTree 7 page 8: ..."): keep one line.
        let shown = findings.prefix(3).joined(separator: "; ").replacing("\n", with: " ")
        throw .corrupt("quick_check reported \(findings.count) problem(s): \(shown)")
    }
}

/// The closure behind a connection's commit hook (`SQLiteDatabase.onCommit`).
final class CommitHook: Sendable {
    let body: @Sendable (Int) -> Bool
    init(_ body: @escaping @Sendable (Int) -> Bool) { self.body = body }
}
