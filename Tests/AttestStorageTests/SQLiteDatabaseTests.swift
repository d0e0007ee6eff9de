import AttestStorage
import Foundation
import Testing

@Suite("SQLiteDatabase")
struct SQLiteDatabaseTests {
    @Test("opening creates the file with WAL, synchronous FULL, foreign keys and the busy timeout")
    func openingConfiguresTheConnection() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("new.sqlite")
        let database = try SQLiteDatabase(path: path, busyTimeout: .milliseconds(1234))
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(try database.scalar("PRAGMA journal_mode") == .text("wal"))
        #expect(try database.scalar("PRAGMA synchronous") == .integer(2))  // 2 = FULL
        #expect(try database.scalar("PRAGMA foreign_keys") == .integer(1))
        #expect(try database.scalar("PRAGMA busy_timeout") == .integer(1234))
    }

    @Test("the default busy timeout is 5000 ms")
    func defaultBusyTimeout() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        #expect(try database.scalar("PRAGMA busy_timeout") == .integer(5000))
    }

    @Test("opening a path in a missing directory fails with io")
    func missingDirectory() throws {
        let directory = try TemporaryDirectory()
        #expect(throws: StorageError(.io, "")) {
            _ = try SQLiteDatabase(path: directory.path("missing/db.sqlite"))
        }
    }

    @Test(
        "every value type round-trips through binding and reading",
        arguments: [
            SQLValue.integer(0), .integer(.min), .integer(.max), .real(-0.5), .real(1e300),
            .text(""), .text("héllo, 世界"), .text("nul\u{0}inside"), .blob([]), .blob([0, 1, 0xFF]), .null,
        ])
    func roundTrip(value: SQLValue) throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        try database.immediateTransaction {
            try database.execute("CREATE TABLE v (x ANY) STRICT")
            try database.execute("INSERT INTO v (x) VALUES (?)", arguments: [value])
        }
        let statement = try database.prepare("SELECT x FROM v")
        #expect(try statement.step())
        #expect(statement.value(at: 0) == value)
        switch value {
        case .integer(let integer): #expect(statement.int64(at: 0) == integer)
        case .real(let real): #expect(statement.double(at: 0) == real)
        case .text(let text): #expect(statement.string(at: 0) == text)
        case .blob(let bytes): #expect(statement.blob(at: 0) == bytes)
        case .null:
            #expect(statement.isNull(at: 0))
            #expect(statement.string(at: 0) == nil)
            #expect(statement.blob(at: 0) == nil)
        }
        #expect(try !statement.step())
    }

    @Test("typed binds by index fill the right parameters")
    func typedBinds() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        let statement = try database.prepare("SELECT ?, ?, ?, ?, ?")
        try statement.bind(Int64(7), at: 1)
        try statement.bind(2.5, at: 2)
        try statement.bind("text", at: 3)
        try statement.bind([9, 8] as [UInt8], at: 4)
        try statement.bind(nil, at: 5)
        #expect(try statement.step())
        #expect((0..<5).map { statement.value(at: $0) } == [.integer(7), .real(2.5), .text("text"), .blob([9, 8]), .null])
    }

    @Test("binding a parameter index out of range or the wrong number of values is misuse")
    func badBinds() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        let statement = try database.prepare("SELECT ?")
        #expect(throws: StorageError(.misuse, "")) { try statement.bind(Int64(1), at: 2) }
        #expect(throws: StorageError(.misuse, "")) { try statement.bind(Int64(1), at: 0) }
        #expect(throws: StorageError(.misuse, "")) { try statement.bind([.integer(1), .integer(2)]) }
    }

    @Test("prepare takes exactly one statement; execute runs scripts")
    func prepareOneExecuteMany() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        #expect(throws: StorageError(.misuse, "")) { _ = try database.prepare("SELECT 1; SELECT 2") }
        #expect(throws: StorageError(.misuse, "")) { _ = try database.prepare("  -- nothing\n") }
        _ = try database.prepare("SELECT 1; -- trailing comment\n")
        try database.immediateTransaction {
            try database.execute("CREATE TABLE a (x INTEGER) STRICT; -- one\n/* two */ CREATE TABLE b (x INTEGER) STRICT;\n")
        }
        #expect(try database.hasSchemaObject("a"))
        #expect(try database.hasSchemaObject("b"))
    }

    @Test("bad SQL fails with statementFailed")
    func badSQL() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        #expect(throws: StorageError(.statementFailed, "")) { _ = try database.prepare("SELEC 1") }
        #expect(throws: StorageError(.statementFailed, "")) { _ = try database.prepare("SELECT * FROM missing") }
    }

    @Test("a statement that writes outside immediateTransaction is refused with misuse")
    func writesNeedATransaction() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        #expect(throws: StorageError(.misuse, "")) { try database.execute("CREATE TABLE t (x INTEGER) STRICT") }
        #expect(try !database.hasSchemaObject("t"))
    }

    @Test(
        "transaction control is reserved to immediateTransaction",
        arguments: ["BEGIN", "begin immediate", "  /* c */ -- c\n COMMIT", "END", "ROLLBACK", "SAVEPOINT s", "RELEASE s"])
    func transactionControlRefused(sql: String) throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        #expect(throws: StorageError(.misuse, "")) { try database.execute(sql) }
        #expect(throws: StorageError(.misuse, "")) {
            try database.immediateTransaction { try database.execute(sql) }
        }
        #expect(!database.isInTransaction)
    }

    @Test("immediateTransaction commits its writes and returns the body's value")
    func transactionCommits() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        let database = try SQLiteDatabase(path: path)
        let value = try database.immediateTransaction { () throws -> Int in
            #expect(database.isInTransaction)
            try database.execute("CREATE TABLE t (x INTEGER) STRICT; INSERT INTO t VALUES (1), (2);")
            return database.changes
        }
        #expect(value == 2)
        #expect(!database.isInTransaction)
        let other = try SQLiteDatabase(path: path)
        #expect(try other.scalar("SELECT count(*) FROM t") == .integer(2))
    }

    @Test("a transaction whose body throws rolls back and rethrows the same error")
    func transactionRollsBack() throws {
        struct Abort: Error, Equatable {}
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        try database.immediateTransaction { try database.execute("CREATE TABLE t (x INTEGER PRIMARY KEY) STRICT") }
        #expect(throws: Abort()) {
            try database.immediateTransaction {
                try database.execute("INSERT INTO t VALUES (1)")
                throw Abort()
            }
        }
        #expect(throws: StorageError(.constraint, "")) {
            try database.immediateTransaction {
                try database.execute("INSERT INTO t VALUES (2)")
                try database.execute("INSERT INTO t VALUES (2)")
            }
        }
        #expect(try database.scalar("SELECT count(*) FROM t") == .integer(0))
        #expect(!database.isInTransaction)
        try database.immediateTransaction { try database.execute("INSERT INTO t VALUES (3)") }
        #expect(try database.scalar("SELECT count(*) FROM t") == .integer(1))
    }

    @Test("immediateTransaction cannot be nested")
    func noNesting() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        #expect(throws: StorageError(.misuse, "")) {
            try database.immediateTransaction { try database.immediateTransaction {} }
        }
        #expect(!database.isInTransaction)
    }

    @Test("a writer on another connection makes a write fail with busy after the timeout, then succeed after release")
    func busyAfterTimeout() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        let first = try SQLiteDatabase(path: path, busyTimeout: .milliseconds(100))
        let second = try SQLiteDatabase(path: path)
        try first.immediateTransaction { try first.execute("CREATE TABLE t (x INTEGER) STRICT") }

        try second.immediateTransaction {
            try second.execute("INSERT INTO t VALUES (1)")
            let clock = ContinuousClock()
            let start = clock.now
            #expect(throws: StorageError(.busy, "")) {
                try first.immediateTransaction { try first.execute("INSERT INTO t VALUES (2)") }
            }
            let waited = clock.now - start
            #expect(waited >= .milliseconds(90), "gave up after \(waited), before the busy timeout")
            #expect(waited < .seconds(3))
            // Readers never block in WAL mode: the first connection still reads the last commit.
            #expect(try first.scalar("SELECT count(*) FROM t") == .integer(0))
        }
        try first.immediateTransaction { try first.execute("INSERT INTO t VALUES (2)") }
        #expect(try first.scalar("SELECT count(*) FROM t") == .integer(2))
    }

    @Test("an error's description never contains bound values")
    func errorsHideArguments() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        try database.immediateTransaction {
            try database.execute("CREATE TABLE t (secret TEXT PRIMARY KEY, n INTEGER) STRICT")
            try database.execute("INSERT INTO t VALUES (?, 1)", arguments: [.text("hunter2-token")])
        }
        let attempts: [(String, [SQLValue])] = [
            ("INSERT INTO t VALUES (?, 1)", [.text("hunter2-token")]),  // UNIQUE
            ("INSERT INTO t VALUES ('x', ?)", [.text("hunter2-token")]),  // STRICT type
        ]
        for (sql, arguments) in attempts {
            let error = #expect(throws: StorageError.self) {
                try database.immediateTransaction { try database.execute(sql, arguments: arguments) }
            }
            #expect(error?.code == .constraint)
            #expect(error.map { !$0.description.contains("hunter2") } == true, "\(String(describing: error))")
        }
    }

    @Test("quickCheck passes on a fresh database")
    func quickCheckFresh() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        try database.quickCheck()
        try Migrator().migrate(database, at: 1_700_000_000)
        try database.quickCheck()
    }

    /// Where a copy of a populated database is overwritten with junk.
    struct Damage: Sendable, CustomTestStringConvertible {
        let name: String
        let offset: Int
        let length: Int
        var testDescription: String { name }
    }

    @Test(
        "a damaged copy is reported as corrupt at open or by quickCheck",
        arguments: [
            Damage(name: "file header", offset: 0, length: 16),
            Damage(name: "schema page body", offset: 100, length: 3996),
            Damage(name: "second page", offset: 4096, length: 4096),
            Damage(name: "a later page", offset: 4096 * 8, length: 4096),
        ])
    func corruptCopy(damage: Damage) throws {
        let directory = try TemporaryDirectory()
        let original = directory.path("original.sqlite")
        do {
            let database = try SQLiteDatabase(path: original)
            try Migrator().migrate(database, at: 1_700_000_000)
            try database.immediateTransaction {
                try database.execute(
                    "INSERT INTO integrations VALUES ('client', 'ws', 'App', 'ABCDE12345', 'active', 'production', 1, NULL, NULL, NULL, 0, NULL, NULL)"
                )
                let insert = try database.prepare(
                    "INSERT INTO tokens (token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at) "
                        + "VALUES (randomblob(32), 'client', 'ws', randomblob(32), 'scope', 1, 2)")
                for _ in 0..<400 { try insert.reset(); try insert.run() }
            }
            try database.quickCheck()
        }  // closing the last connection checkpoints the WAL into the main file
        let bytes = try Data(contentsOf: URL(fileURLWithPath: original))
        try #require(bytes.count >= damage.offset + damage.length)
        var damaged = bytes
        damaged.replaceSubrange(
            damage.offset..<(damage.offset + damage.length), with: [UInt8](repeating: 0xA5, count: damage.length))
        let copy = directory.path("copy.sqlite")
        try damaged.write(to: URL(fileURLWithPath: copy))

        #expect(throws: StorageError(.corrupt, "")) {
            let database = try SQLiteDatabase(path: copy)
            try database.quickCheck()
        }
    }
}
