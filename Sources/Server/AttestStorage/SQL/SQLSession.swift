/// One connection inside one store operation, in either dialect: the shared operations
/// (`SQLTokenStore`) run their statements through it without knowing which backend answers.
package protocol SQLSession {
    /// Which text of a statement this session runs.
    var dialect: SQLDialect { get }
    /// Runs `statement` with `arguments` and returns its rows.
    func rows(_ statement: SQLStatement, _ arguments: [SQLValue]) throws(StorageError) -> [SQLRow]
    /// Runs a writing `statement` and returns how many rows it changed.
    @discardableResult
    func run(_ statement: SQLStatement, _ arguments: [SQLValue]) throws(StorageError) -> Int
}

extension SQLSession {
    /// The first row, or nil when there is none.
    package func row(_ statement: SQLStatement, _ arguments: [SQLValue]) throws(StorageError) -> SQLRow? {
        try rows(statement, arguments).first
    }

    /// Every row decoded as `Record`.
    package func records<Record: DecodableRecord>(
        _ type: Record.Type, _ statement: SQLStatement, _ arguments: [SQLValue]
    ) throws(StorageError) -> [Record] {
        var records: [Record] = []
        for row in try rows(statement, arguments) { records.append(try Record(decoding: row)) }
        return records
    }

    /// The first row decoded as `Record`, or nil.
    package func record<Record: DecodableRecord>(
        _ type: Record.Type, _ statement: SQLStatement, _ arguments: [SQLValue]
    ) throws(StorageError) -> Record? {
        guard let row = try row(statement, arguments) else { return nil }
        return try Record(decoding: row)
    }

    /// The one whole number a statement such as `SELECT count(*)` answers.
    package func count(_ statement: SQLStatement, _ arguments: [SQLValue]) throws(StorageError) -> Int {
        guard let row = try row(statement, arguments) else { throw .statementFailed("a count answered no row") }
        return Int(try row.int64(0))
    }
}

/// A SQLite connection as a session (the caller holds the connection's lock).
struct SQLiteSession: SQLSession {
    let database: SQLiteDatabase

    var dialect: SQLDialect { .sqlite }

    func rows(_ statement: SQLStatement, _ arguments: [SQLValue]) throws(StorageError) -> [SQLRow] {
        let prepared = try database.cachedStatement(statement.sqlite)
        try prepared.bind(arguments)
        var rows: [SQLRow] = []
        let columns = prepared.columnCount
        while try prepared.step() { rows.append(SQLRow((0..<columns).map(prepared.value(at:)))) }
        return rows
    }

    @discardableResult
    func run(_ statement: SQLStatement, _ arguments: [SQLValue]) throws(StorageError) -> Int {
        let prepared = try database.cachedStatement(statement.sqlite)
        try prepared.bind(arguments)
        try prepared.run()
        return database.changes
    }
}

/// A PostgreSQL connection as a session (the pool lent it to this operation).
struct PostgresSession: SQLSession {
    let connection: PostgresConnection

    var dialect: SQLDialect { .postgresql }

    func rows(_ statement: SQLStatement, _ arguments: [SQLValue]) throws(StorageError) -> [SQLRow] {
        try connection.query(statement.postgresql, arguments).rows()
    }

    @discardableResult
    func run(_ statement: SQLStatement, _ arguments: [SQLValue]) throws(StorageError) -> Int {
        try connection.query(statement.postgresql, arguments).changed
    }
}
