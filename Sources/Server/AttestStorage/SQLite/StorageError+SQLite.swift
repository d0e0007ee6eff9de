internal import CSQLite

extension StorageError {
    /// Maps a failed SQLite result code to a `StorageError`.
    ///
    /// Call it straight after the failing call: it reads the connection's message and extended
    /// code, which the next call on the connection overwrites. The message is SQLite's own
    /// (`UNIQUE constraint failed: tokens.token_hash`), which names schema objects but never
    /// quotes bound values.
    static func sqlite(
        _ resultCode: Int32, _ operation: String, connection: OpaquePointer?,
        file: String = #fileID, line: Int = #line
    ) -> StorageError {
        var extended = resultCode
        var message = String(cString: sqlite3_errstr(resultCode))
        if let connection, sqlite3_errcode(connection) & 0xff == resultCode & 0xff {
            // The connection's state describes this failure: take its extended code and detail.
            extended = sqlite3_extended_errcode(connection)
            message = String(cString: sqlite3_errmsg(connection))
        }
        let reason = "\(operation) failed: \(message) (SQLite code \(extended))"
        return StorageError(code(forSQLiteResult: extended), reason, file: file, line: line)
    }

    /// The storage code for an SQLite primary or extended result code.
    static func code(forSQLiteResult result: Int32) -> Code {
        switch result & 0xff {
        case SQLITE_BUSY, SQLITE_LOCKED, SQLITE_PROTOCOL: .busy
        case SQLITE_CORRUPT, SQLITE_NOTADB: .corrupt
        case SQLITE_READONLY: .readOnly
        case SQLITE_FULL: .full
        case SQLITE_CONSTRAINT: .constraint
        case SQLITE_IOERR, SQLITE_CANTOPEN: .io
        case SQLITE_MISUSE, SQLITE_RANGE: .misuse
        default: .statementFailed
        }
    }
}
