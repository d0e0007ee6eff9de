/// Brings a database's schema up to date, in the GRDB style.
///
/// Migrations run in id order, each in its own `BEGIN IMMEDIATE` transaction together with its
/// row in `schema_migrations`, so a migration is either wholly applied and recorded or not at
/// all. Applied ones are skipped. A database that records a migration this binary does not know
/// was written by a newer binary: `migrate` throws `migrationUnknown` and the program must not start.
package struct Migrator: Sendable {
    /// The migrations this binary knows, in strictly increasing id order.
    package let migrations: [Migration]

    /// Makes a migrator; `migrations` must have strictly increasing ids from 1 and non-empty names.
    /// Told of each migration applied and its duration.
    package var report: MigrationReport?

    package init(migrations: [Migration] = EmbeddedMigrations.sqlite, report: MigrationReport? = nil) {
        self.report = report
        // A malformed list is a programming error in the binary itself, caught by the test suite.
        for (previous, next) in zip([Migration(id: 0, name: "-", sql: "")] + migrations, migrations) {
            precondition(next.id > previous.id, "migration ids must increase: \(previous.id) then \(next.id)")
            precondition(!next.name.isEmpty, "migration \(next.id) has no name")
        }
        self.migrations = migrations
    }

    /// Applies every migration the database lacks; returns those applied by this call, in order.
    ///
    /// `time` (Unix seconds) is recorded as `applied_at`. Throws `migrationUnknown` before
    /// writing anything when the database records a migration id (or name) this binary lacks,
    /// `migrationFailed` when a migration's SQL fails (nothing of it is kept), and `busy`,
    /// `io`, `full`, `readOnly` or `corrupt` as the database reports them.
    @discardableResult
    package func migrate(_ database: SQLiteDatabase, at time: Int64) throws(StorageError) -> [Migration] {
        if try !bookkeepingExists(database) {
            try transaction(database) { () throws(StorageError) in
                try database.execute(Self.bookkeepingSQL)
            }
        }
        let recorded = try records(database)
        try verify(recorded)
        var applied: [Migration] = []
        for migration in migrations where recorded[migration.id] == nil {
            let started = ContinuousClock.now
            let didApply = try transaction(database) { () throws(StorageError) -> Bool in
                // Read again under the write lock: another process may have migrated meanwhile.
                let current = try records(database)
                try verify(current)
                guard current[migration.id] == nil else { return false }
                try apply(migration, database)
                try database.execute(
                    "INSERT INTO schema_migrations (id, name, applied_at) VALUES (?, ?, ?)",
                    arguments: [.integer(Int64(migration.id)), .text(migration.name), .integer(time)])
                return true
            }
            if didApply {
                applied.append(migration)
                report?(migration, .now - started)
            }
        }
        return applied
    }

    /// Refuses a database whose schema is not exactly this binary's (newer or older), without
    /// changing anything: for attestctl, which never migrates on its own.
    package func requireCurrent(_ database: SQLiteDatabase) throws(StorageError) {
        let recorded = try bookkeepingExists(database) ? try records(database) : [:]
        try Migration.requireCurrent(recorded: recorded, known: migrations)
    }

    /// The ids recorded in `schema_migrations`, ascending (empty for a fresh database).
    package func appliedMigrationIDs(_ database: SQLiteDatabase) throws(StorageError) -> [Int] {
        guard try bookkeepingExists(database) else { return [] }
        return try records(database).keys.sorted()
    }

    // MARK: Steps

    static let bookkeepingSQL = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at INTEGER NOT NULL
        ) STRICT
        """

    private func bookkeepingExists(_ database: SQLiteDatabase) throws(StorageError) -> Bool {
        let statement = try database.prepare(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'")
        return try statement.step()
    }

    /// Recorded migrations as id -> name.
    private func records(_ database: SQLiteDatabase) throws(StorageError) -> [Int: String] {
        let statement = try database.prepare("SELECT id, name FROM schema_migrations ORDER BY id")
        var records: [Int: String] = [:]
        while try statement.step() {
            records[Int(statement.int64(at: 0))] = statement.string(at: 1) ?? ""
        }
        return records
    }

    private func verify(_ recorded: [Int: String]) throws(StorageError) {
        try Migration.verify(recorded: recorded, known: migrations)
    }

    private func apply(_ migration: Migration, _ database: SQLiteDatabase) throws(StorageError) {
        do {
            try database.execute(migration.sql)
        } catch {
            switch error.code {
            case .busy, .corrupt, .readOnly, .full, .io:
                // The environment failed, not the migration's SQL: report it as such.
                throw error
            default:
                throw .migrationFailed("migration \(migration.id) '\(migration.name)' failed: \(error.reason)")
            }
        }
        // Foreign keys are not checked during DDL; a migration must not leave dangling references.
        let check = try database.prepare("PRAGMA foreign_key_check")
        if try check.step() {
            let table = check.string(at: 0) ?? "?"
            let parent = check.string(at: 2) ?? "?"
            throw .migrationFailed(
                "migration \(migration.id) '\(migration.name)' left rows in \(table) "
                    + "referencing missing \(parent) rows")
        }
    }

    /// `immediateTransaction` with the body's typed error kept typed.
    private func transaction<T>(
        _ database: SQLiteDatabase, _ body: () throws(StorageError) -> T
    ) throws(StorageError) -> T {
        do {
            return try database.immediateTransaction { try body() }
        } catch let error as StorageError {
            throw error
        } catch {
            // Unreachable: body and immediateTransaction only throw StorageError.
            throw .statementFailed("transaction failed: \(type(of: error))")
        }
    }
}
