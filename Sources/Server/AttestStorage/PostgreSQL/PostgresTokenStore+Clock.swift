extension PostgresTokenStore {
    /// The server's clock (`ClockCheck` measures each node's against it).
    package func databaseTime() throws(StorageError) -> Double? {
        let row = try perform(.read) { session throws(StorageError) in
            try session.row(SQLStatement("SELECT extract(epoch FROM clock_timestamp())::float8"), [])
        }
        guard let row else { throw .statementFailed("the database's clock answered no row") }
        return try row.double(0)
    }

    /// Nil: the server's clock is checked instead (`databaseTime`).
    package func recordedTime() throws(StorageError) -> RecordedTime? { nil }
}
