/// Opens the token store a `StoreLocation` names, so attestd and attestctl choose a backend the
/// same way.
package enum TokenStores {
    /// Opens and migrates the store (attestd): SQLite with `busyTimeout` and two readers, or a
    /// PostgreSQL pool of `connections`.
    package static func open(
        _ location: StoreLocation, connections: Int, busyTimeout: Duration, migrateAt time: Int64, report: MigrationReport? = nil
    ) throws(StorageError) -> any TokenStore {
        try open(location, connections: connections, busyTimeout: busyTimeout, now: { time }, report: report, events: nil)
    }

    /// `open` for attestd: on PostgreSQL a server that does not answer at start is retried in the
    /// background (`PostgresTokenStore.opening`), `events` told of it, instead of failing the start.
    package static func open(
        _ location: StoreLocation, connections: Int, busyTimeout: Duration, now: @escaping @Sendable () -> Int64,
        report: MigrationReport? = nil, events: (@Sendable (StoreStartupEvent) -> Void)?
    ) throws(StorageError) -> any TokenStore {
        let time = now()
        switch location {
        case .sqlite(let path):
            return try SQLiteTokenStore(path: path, busyTimeout: busyTimeout, migrateAt: time, report: report)
        case .postgresql(var settings):
            settings.poolSize = max(1, connections)
            guard let events else { return try PostgresTokenStore(settings: settings, migrateAt: time, report: report) }
            return try PostgresTokenStore.opening(settings: settings, now: now, report: report, events: events)
        }
    }

    /// Opens an existing store whose schema is exactly this binary's, creating and migrating
    /// nothing (attestctl): `missing`, `schemaBehind` or `migrationUnknown` otherwise, and
    /// `moved` for a SQLite file `store copy` moved, unless `allowingMoved` (a copy's source).
    package static func openExisting(
        _ location: StoreLocation, busyTimeout: Duration, allowingMoved: Bool = false
    ) throws(StorageError) -> any TokenStore {
        switch location {
        case .sqlite(let path):
            return try SQLiteTokenStore(existingAt: path, busyTimeout: busyTimeout, allowingMoved: allowingMoved)
        case .postgresql(var settings):
            settings.poolSize = 1
            return try PostgresTokenStore(existing: settings)
        }
    }

    /// Applies the migrations this binary knows (`attestctl migrate`, and the target of
    /// `attestctl store copy`); creates a SQLite file only when `create`. Returns the store and
    /// the migrations applied by this call.
    package static func migrate(
        _ location: StoreLocation, create: Bool, busyTimeout: Duration, at time: Int64
    ) throws(StorageError) -> (store: any TokenStore, applied: [Migration]) {
        switch location {
        case .sqlite(let path):
            guard create || FileSize.exists(path) else {
                throw .missing("there is no database at \(path); attestd creates it when it first starts (check --db or ATTESTD_DB)")
            }
            let database = try SQLiteDatabase(path: path, busyTimeout: busyTimeout, create: create)
            try database.cheapCheck()
            try database.refuseIfMoved(path)
            let applied = try Migrator().migrate(database, at: time)
            return (try SQLiteTokenStore(existingAt: path, busyTimeout: busyTimeout), applied)
        case .postgresql(var settings):
            settings.poolSize = 1
            let store = PostgresTokenStore(unconnected: settings)
            let applied = try store.migrate(at: time)
            return (store, applied)
        }
    }
}
