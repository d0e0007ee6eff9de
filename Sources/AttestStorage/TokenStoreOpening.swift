/// Opens the token store a `StoreLocation` names, so attestd and attestctl choose a backend the
/// same way.
package enum TokenStores {
    /// Opens and migrates the store (attestd): SQLite with `busyTimeout` and two readers, or a
    /// PostgreSQL pool of `connections`.
    package static func open(
        _ location: StoreLocation, connections: Int, busyTimeout: Duration, migrateAt time: Int64
    ) throws(StorageError) -> any TokenStore {
        switch location {
        case .sqlite(let path):
            return try SQLiteTokenStore(path: path, busyTimeout: busyTimeout, migrateAt: time)
        case .postgresql(var settings):
            settings.poolSize = max(1, connections)
            return try PostgresTokenStore(settings: settings, migrateAt: time)
        }
    }
}
