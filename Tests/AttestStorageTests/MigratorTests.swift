import AttestStorage
import Foundation
import Testing

@Suite("Migrator")
struct MigratorTests {
    static let time: Int64 = 1_700_000_000
    static let first = Migration(id: 1, name: "first", sql: "CREATE TABLE a (x INTEGER) STRICT;\n")
    static let second = Migration(id: 2, name: "second", sql: "CREATE TABLE b (x INTEGER) STRICT;\n")

    @Test("the embedded migrations apply once, are recorded, and a second run is a no-op")
    func appliesOnceIdempotent() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        let database = try SQLiteDatabase(path: path)
        let migrator = Migrator()
        #expect(try migrator.appliedMigrationIDs(database) == [])
        #expect(try migrator.migrate(database, at: Self.time).map(\.id) == EmbeddedMigrations.sqlite.map(\.id))
        #expect(try migrator.appliedMigrationIDs(database) == EmbeddedMigrations.sqlite.map(\.id))
        #expect(try migrator.migrate(database, at: Self.time + 1).isEmpty)
        #expect(try migrator.migrate(SQLiteDatabase(path: path), at: Self.time + 2).isEmpty)
        #expect(try database.scalar("SELECT name FROM schema_migrations WHERE id = 1") == .text("initial"))
        #expect(try database.scalar("SELECT applied_at FROM schema_migrations WHERE id = 1") == .integer(Self.time))
        for table in ["integrations", "integration_bundle_ids", "challenges", "devices", "tokens", "rate_buckets"] {
            #expect(try database.hasSchemaObject(table), "missing table \(table)")
        }
    }

    @Test("an older database gets only the migrations it lacks")
    func appliesOnlyNewOnes() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        #expect(try Migrator(migrations: [Self.first]).migrate(database, at: Self.time).map(\.id) == [1])
        #expect(try Migrator(migrations: [Self.first, Self.second]).migrate(database, at: Self.time).map(\.id) == [2])
        #expect(try database.hasSchemaObject("b"))
    }

    @Test("a database recording a migration id the binary does not know is refused, except the next one (expand-only)")
    func unknownMigrationID() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        try Migrator(migrations: [Self.first, Self.second]).migrate(database, at: Self.time)
        // One release behind: the binary that knows only the first migration runs on the second's schema.
        #expect(try Migrator(migrations: [Self.first]).migrate(database, at: Self.time) == [])
        try Migrator(migrations: [Self.first]).requireCurrent(database)
        // Two releases behind: refused.
        let third = Migration(id: 3, name: "third", sql: "CREATE TABLE third (id INTEGER) STRICT;")
        try Migrator(migrations: [Self.first, Self.second, third]).migrate(database, at: Self.time)
        #expect(throws: StorageError(.migrationUnknown, "")) {
            try Migrator(migrations: [Self.first]).migrate(database, at: Self.time)
        }
        try database.immediateTransaction {
            try database.execute("INSERT INTO schema_migrations VALUES (999, 'future', 0)")
        }
        #expect(throws: StorageError(.migrationUnknown, "")) {
            try Migrator(migrations: [Self.first, Self.second]).migrate(database, at: Self.time)
        }
    }

    @Test("a database recording a known id under another name is refused")
    func renamedMigration() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        try Migrator(migrations: [Self.first]).migrate(database, at: Self.time)
        let renamed = Migration(id: 1, name: "other", sql: Self.first.sql)
        #expect(throws: StorageError(.migrationUnknown, "")) {
            try Migrator(migrations: [renamed]).migrate(database, at: Self.time)
        }
    }

    @Test("a failing migration leaves no bookkeeping row and no partial schema")
    func failingMigrationLeavesNothing() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        let broken = Migration(
            id: 2, name: "second",
            sql: "CREATE TABLE b (x INTEGER) STRICT;\nCREATE INDEX b_x ON b (x);\nINSERT INTO missing VALUES (1);\n")
        #expect(throws: StorageError(.migrationFailed, "")) {
            try Migrator(migrations: [Self.first, broken]).migrate(database, at: Self.time)
        }
        #expect(try Migrator(migrations: [Self.first]).appliedMigrationIDs(database) == [1])
        #expect(try database.hasSchemaObject("a"))
        #expect(try !database.hasSchemaObject("b"))
        #expect(try !database.hasSchemaObject("b_x"))
        #expect(!database.isInTransaction)
        // The fixed migration then applies normally.
        #expect(try Migrator(migrations: [Self.first, Self.second]).migrate(database, at: Self.time).map(\.id) == [2])
    }

    @Test("a migration that leaves dangling foreign keys fails and is rolled back")
    func danglingForeignKeys() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        let dangling = Migration(
            id: 1, name: "dangling",
            sql: """
                CREATE TABLE parent (id INTEGER PRIMARY KEY) STRICT;
                CREATE TABLE child (parent_id INTEGER REFERENCES parent (id)) STRICT;
                PRAGMA defer_foreign_keys = ON;
                INSERT INTO child VALUES (42);

                """)
        #expect(throws: StorageError(.migrationFailed, "")) {
            try Migrator(migrations: [dangling]).migrate(database, at: Self.time)
        }
        #expect(try !database.hasSchemaObject("child"))
        #expect(try Migrator(migrations: [dangling]).appliedMigrationIDs(database) == [])
    }

    /// One write the initial schema must refuse.
    struct Violation: Sendable, CustomTestStringConvertible {
        let name: String
        let sql: String
        var testDescription: String { name }
    }

    @Test(
        "the initial schema refuses malformed rows",
        arguments: [
            Violation(
                name: "unknown integration status",
                sql: "INSERT INTO integrations VALUES ('c2', 'ws', 'n', 'T', 'paused', 'production', 1, NULL, NULL, NULL, 0, NULL, NULL)"),
            Violation(
                name: "revoked without revoked_at",
                sql: "INSERT INTO integrations VALUES ('c2', 'ws', 'n', 'T', 'revoked', 'production', 1, NULL, NULL, NULL, 0, NULL, NULL)"),
            Violation(
                name: "unknown environment",
                sql: "INSERT INTO integrations VALUES ('c2', 'ws', 'n', 'T', 'active', 'staging', 1, NULL, NULL, NULL, 0, NULL, NULL)"),
            Violation(
                name: "text in an integer column (STRICT)",
                sql:
                    "INSERT INTO integrations VALUES ('c2', 'ws', 'n', 'T', 'active', 'production', 'now', NULL, NULL, NULL, 0, NULL, NULL)"
            ),
            Violation(
                name: "duplicate client_id",
                sql: "INSERT INTO integrations VALUES ('c', 'ws', 'n', 'T', 'active', 'production', 1, NULL, NULL, NULL, 0, NULL, NULL)"),
            Violation(name: "bundle for a missing integration", sql: "INSERT INTO integration_bundle_ids VALUES ('nope', 'b')"),
            Violation(
                name: "challenge id not 32 bytes", sql: "INSERT INTO challenges VALUES (randomblob(16), 'c', 1, 2, NULL)"),
            Violation(
                name: "challenge for a missing integration",
                sql: "INSERT INTO challenges VALUES (randomblob(32), 'nope', 1, 2, NULL)"),
            Violation(
                name: "challenge expiring before creation",
                sql: "INSERT INTO challenges VALUES (randomblob(32), 'c', 2, 1, NULL)"),
            Violation(
                name: "device counter above UInt32",
                sql:
                    "INSERT INTO devices VALUES (randomblob(32), 'c', randomblob(65), 4294967296, 'production', x'', 'active', 1, 1, 'anchor', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
            ),
            Violation(
                name: "device public key not 65 bytes",
                sql:
                    "INSERT INTO devices VALUES (randomblob(32), 'c', randomblob(64), 0, 'production', x'', 'active', 1, 1, 'anchor', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
            ),
            Violation(
                name: "token for a missing integration",
                sql: "INSERT INTO tokens VALUES (NULL, randomblob(32), 'nope', 'ws', randomblob(32), 's', 1, 2, NULL)"),
            Violation(
                name: "token hash not 32 bytes",
                sql: "INSERT INTO tokens VALUES (NULL, randomblob(31), 'c', 'ws', randomblob(32), 's', 1, 2, NULL)"),
        ])
    func schemaRefuses(violation: Violation) throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.path("db.sqlite"))
        try Migrator().migrate(database, at: Self.time)
        try database.immediateTransaction {
            try database.execute(
                "INSERT INTO integrations VALUES ('c', 'ws', 'App', 'ABCDE12345', 'active', 'development,production', 1, NULL, NULL, NULL, 0, NULL, NULL)"
            )
            try database.execute(
                "INSERT INTO devices VALUES (randomblob(32), 'c', randomblob(65), 0, 'production', x'', 'active', 1, 1, 'anchor', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
            )
            try database.execute("INSERT INTO tokens VALUES (NULL, randomblob(32), 'c', 'ws', randomblob(32), 's', 1, 2, NULL)")
        }
        #expect(throws: StorageError(.constraint, "")) {
            try database.immediateTransaction { try database.execute(violation.sql) }
        }
    }

    @Test("the gauge's count of active devices reads the status index, never the device rows (their receipts)")
    func activeDevicesCountedOnTheIndex() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("gauge.sqlite")
        _ = try SQLiteTokenStore(path: path, migrateAt: 1_000)
        let database = try SQLiteDatabase(path: path)
        let plan = try database.prepare("EXPLAIN QUERY PLAN SELECT count(*) FROM devices WHERE status = 'active'")
        var details: [String] = []
        while try plan.step() { details.append(plan.string(at: 3) ?? "") }
        #expect(details.contains { $0.contains("COVERING INDEX devices_by_status") }, "\(details)")
    }
}
