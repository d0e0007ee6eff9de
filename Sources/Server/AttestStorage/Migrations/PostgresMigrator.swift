/// Brings a PostgreSQL database's schema up to date: the same rules as `Migrator` (ordered,
/// immutable, each migration in one transaction with its `schema_migrations` row, unknown or
/// renamed ones refused), under a session advisory lock so that several nodes starting at once
/// on an empty database apply each migration exactly once.
package struct PostgresMigrator: Sendable {
    /// The key of the advisory lock (the ASCII of "attestd" as a number): one migrator at a time per database.
    static let lockKey: Int64 = 0x61_7474_6573_7464

    /// The migrations this binary knows, in strictly increasing id order.
    package let migrations: [Migration]

    /// Makes a migrator for `migrations` (default: `Migrations/postgresql`).
    /// Told of each migration applied and its duration.
    package var report: MigrationReport?

    package init(migrations: [Migration] = EmbeddedMigrations.postgresql, report: MigrationReport? = nil) {
        self.report = report
        self.migrations = migrations
    }

    static let bookkeepingSQL = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at BIGINT NOT NULL
        )
        """

    /// Applies every migration the database lacks; returns those applied by this call.
    @discardableResult
    package func migrate(_ connection: PostgresConnection, at time: Int64) throws(StorageError) -> [Migration] {
        // Waits for a node that is migrating right now; released on every path below.
        try connection.query("SELECT pg_advisory_lock($1)", [.integer(Self.lockKey)])
        do throws(StorageError) {
            let applied = try migrateLocked(connection, at: time)
            try connection.query("SELECT pg_advisory_unlock($1)", [.integer(Self.lockKey)])
            return applied
        } catch {
            // A broken connection releases the lock with the session; otherwise release it here.
            if connection.isHealthy { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [.integer(Self.lockKey)]) }
            throw error
        }
    }

    /// Refuses a database whose schema is not exactly this binary's, without changing anything.
    package func requireCurrent(_ connection: PostgresConnection) throws(StorageError) {
        try Migration.requireCurrent(recorded: try records(connection), known: migrations)
    }

    /// The ids recorded in `schema_migrations`, ascending (empty for a fresh database).
    package func appliedMigrationIDs(_ connection: PostgresConnection) throws(StorageError) -> [Int] {
        try records(connection).keys.sorted()
    }

    private func migrateLocked(_ connection: PostgresConnection, at time: Int64) throws(StorageError) -> [Migration] {
        if try !bookkeepingExists(connection) {
            try connection.execute(Self.bookkeepingSQL)
        }
        let recorded = try records(connection)
        try Migration.verify(recorded: recorded, known: migrations)
        var applied: [Migration] = []
        for migration in migrations where recorded[migration.id] == nil {
            let started = ContinuousClock.now
            try connection.execute("BEGIN")
            do throws(StorageError) {
                do throws(StorageError) {
                    try connection.execute(migration.sql)
                } catch {
                    switch error.code {
                    case .unavailable, .busy, .full, .io, .readOnly: throw error
                    default: throw .migrationFailed("migration \(migration.id) '\(migration.name)' failed: \(error.reason)")
                    }
                }
                try connection.query(
                    "INSERT INTO schema_migrations (id, name, applied_at) VALUES ($1, $2, $3)",
                    [.integer(Int64(migration.id)), .text(migration.name), .integer(time)])
                try connection.execute("COMMIT")
            } catch {
                if connection.isHealthy { try? connection.execute("ROLLBACK") }
                throw error
            }
            applied.append(migration)
            report?(migration, .now - started)
        }
        return applied
    }

    private func bookkeepingExists(_ connection: PostgresConnection) throws(StorageError) -> Bool {
        try connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL").cells.first?.first??.first == 1
    }

    private func records(_ connection: PostgresConnection) throws(StorageError) -> [Int: String] {
        guard try bookkeepingExists(connection) else { return [:] }
        let rows = try connection.query("SELECT id::bigint, name FROM schema_migrations ORDER BY id")
        var records: [Int: String] = [:]
        for row in 0..<rows.count { records[Int(rows.int64(row, 0))] = rows.string(row, 1) ?? "" }
        return records
    }
}
