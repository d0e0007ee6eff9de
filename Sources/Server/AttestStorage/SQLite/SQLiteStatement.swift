internal import CSQLite

/// A prepared statement: the only owner of its `sqlite3_stmt`, finalized in `deinit`.
///
/// Parameter indexes are 1-based and column indexes 0-based, as in SQLite. A statement keeps its
/// database alive, so the connection is never closed under it, unless it lives in the
/// connection's own cache. Not `Sendable`: it belongs to the same thread of control as its database.
package final class SQLiteStatement {
    /// The connection this statement was prepared on.
    unowned let database: SQLiteDatabase
    /// The same connection, held strongly; nil for a statement of the connection's own cache
    /// (`cachedStatement`), which the connection holds: a strong reference back would be a cycle,
    /// and the connection and its files would stay open after the last user let it go.
    private var owner: SQLiteDatabase?
    private let handle: OpaquePointer
    /// PRAGMA and VACUUM are exempt from the write gate: they read or set connection state, or (VACUUM
    /// INTO) read one snapshot into another file, and cannot run inside a transaction.
    private let isControl: Bool
    private var hasRow = false

    init(database: SQLiteDatabase, handle: OpaquePointer, isControl: Bool) {
        (self.database, self.owner, self.handle, self.isControl) = (database, database, handle, isControl)
    }

    /// The connection's cache holds this statement from now on: it no longer holds the connection.
    func moveIntoCache() {
        owner = nil
    }

    deinit {
        // sqlite3_finalize only repeats the last step's error (already thrown); it always frees.
        _ = sqlite3_finalize(handle)
    }

    /// The number of `?` parameters the statement takes.
    package var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    /// The number of columns each row has.
    package var columnCount: Int { Int(sqlite3_column_count(handle)) }

    /// True when the statement does not write (SELECT, most PRAGMAs, BEGIN/COMMIT).
    package var isReadOnly: Bool { sqlite3_stmt_readonly(handle) != 0 }

    // MARK: Binding

    /// Binds a 64-bit integer to the 1-based parameter `index`.
    package func bind(_ value: Int64, at index: Int) throws(StorageError) {
        let position = try parameterIndex(index)
        try check(sqlite3_bind_int64(handle, position, value), "bind integer")
    }

    /// Binds a double to the 1-based parameter `index`.
    package func bind(_ value: Double, at index: Int) throws(StorageError) {
        let position = try parameterIndex(index)
        try check(sqlite3_bind_double(handle, position, value), "bind real")
    }

    /// Binds UTF-8 text to the 1-based parameter `index` (SQLite copies it).
    package func bind(_ value: String, at index: Int) throws(StorageError) {
        let position = try parameterIndex(index)
        var text = value
        let result = text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                // An empty buffer may have no base address, and a nil pointer would bind NULL.
                guard let base = chars.baseAddress else {
                    return sqlite3_bind_text64(handle, position, "", 0, CSQLite_transient(), UInt8(SQLITE_UTF8))
                }
                return sqlite3_bind_text64(
                    handle, position, base, sqlite3_uint64(chars.count), CSQLite_transient(), UInt8(SQLITE_UTF8))
            }
        }
        try check(result, "bind text")
    }

    /// Binds bytes to the 1-based parameter `index` (SQLite copies them); `[]` binds a zero-length blob.
    package func bind(_ value: [UInt8], at index: Int) throws(StorageError) {
        let position = try parameterIndex(index)
        let result: Int32
        if value.isEmpty {
            // A nil pointer would bind NULL, not an empty blob: say "zero bytes" explicitly.
            result = sqlite3_bind_zeroblob(handle, position, 0)
        } else {
            result = value.withUnsafeBytes { bytes in
                sqlite3_bind_blob64(
                    handle, position, bytes.baseAddress, sqlite3_uint64(bytes.count), CSQLite_transient())
            }
        }
        try check(result, "bind blob")
    }

    /// Binds SQL NULL to the 1-based parameter `index`.
    package func bindNull(at index: Int) throws(StorageError) {
        let position = try parameterIndex(index)
        try check(sqlite3_bind_null(handle, position), "bind null")
    }

    /// Binds any `SQLValue` to the 1-based parameter `index`.
    package func bind(_ value: SQLValue, at index: Int) throws(StorageError) {
        switch value {
        case .integer(let integer): try bind(integer, at: index)
        case .real(let real): try bind(real, at: index)
        case .text(let text): try bind(text, at: index)
        case .blob(let bytes): try bind(bytes, at: index)
        case .null: try bindNull(at: index)
        }
    }

    /// Resets the statement and binds `values` to parameters 1...n; the count must match exactly.
    package func bind(_ values: [SQLValue]) throws(StorageError) {
        guard values.count == parameterCount else {
            throw .misuse("statement takes \(parameterCount) parameters, \(values.count) given")
        }
        rewind()
        try check(sqlite3_clear_bindings(handle), "clear bindings")
        for (offset, value) in values.enumerated() {
            try bind(value, at: offset + 1)
        }
    }

    // MARK: Stepping

    /// Runs the statement to its next row: `true` when a row is ready to read, `false` when done.
    ///
    /// A statement that writes (other than a PRAGMA or VACUUM) is refused with `misuse` unless the
    /// connection is inside `immediateTransaction`, so every write takes the write lock up front. On failure the
    /// statement is reset, releasing any read it held.
    package func step() throws(StorageError) -> Bool {
        hasRow = false
        guard isReadOnly || isControl || database.allowsWrites else {
            // Why: a write in autocommit mode or a deferred transaction can fail with
            // SQLITE_BUSY_SNAPSHOT at once, ignoring the busy timeout (see STYLE.md Gotchas).
            throw .misuse("a statement that writes must run inside immediateTransaction")
        }
        let result = sqlite3_step(handle)
        switch result {
        case SQLITE_ROW:
            hasRow = true
            return true
        case SQLITE_DONE:
            return false
        default:
            let error = StorageError.sqlite(result, "step", connection: database.handle)
            // sqlite3_reset repeats the error just reported; it is called only to release locks.
            _ = sqlite3_reset(handle)
            throw error
        }
    }

    /// Steps until done, discarding any rows.
    package func run() throws(StorageError) {
        while try step() {}
    }

    /// Rewinds for reuse, ignoring the code sqlite3_reset returns: it only repeats the last
    /// step's error, which that step already threw.
    func rewind() {
        hasRow = false
        _ = sqlite3_reset(handle)
    }

    /// Rewinds the statement so it can run again; bindings are kept.
    package func reset() throws(StorageError) {
        hasRow = false
        try check(sqlite3_reset(handle), "reset")
    }

    // MARK: Columns of the current row

    /// The column's value as a 64-bit integer (NULL reads as 0).
    package func int64(at column: Int) -> Int64 {
        sqlite3_column_int64(handle, columnIndex(column))
    }

    /// The column's value as a double (NULL reads as 0).
    package func double(at column: Int) -> Double {
        sqlite3_column_double(handle, columnIndex(column))
    }

    /// The column's value as UTF-8 text, or nil when it is NULL.
    package func string(at column: Int) -> String? {
        let position = columnIndex(column)
        guard sqlite3_column_type(handle, position) != SQLITE_NULL else { return nil }
        // Text first, then its length, as SQLite's documentation orders the calls.
        guard let text = sqlite3_column_text(handle, position) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, position))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// The column's value as bytes, or nil when it is NULL; a zero-length blob reads as `[]`.
    package func blob(at column: Int) -> [UInt8]? {
        let position = columnIndex(column)
        guard sqlite3_column_type(handle, position) != SQLITE_NULL else { return nil }
        // sqlite3_column_blob returns NULL for a zero-length blob, hence the type check above.
        guard let bytes = sqlite3_column_blob(handle, position) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, position))
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// True when the column's value is NULL.
    package func isNull(at column: Int) -> Bool {
        sqlite3_column_type(handle, columnIndex(column)) == SQLITE_NULL
    }

    /// The column's value with its stored type.
    package func value(at column: Int) -> SQLValue {
        let position = columnIndex(column)
        switch sqlite3_column_type(handle, position) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, position))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, position))
        case SQLITE_TEXT: return .text(string(at: column) ?? "")
        case SQLITE_BLOB: return .blob(blob(at: column) ?? [])
        default: return .null
        }
    }

    // MARK: Helpers

    private func parameterIndex(_ index: Int) throws(StorageError) -> Int32 {
        guard index >= 1, index <= parameterCount, let position = Int32(exactly: index) else {
            throw .misuse("parameter index \(index) is outside 1...\(parameterCount)")
        }
        return position
    }

    /// Reading a column without a current row, or out of range, is a programming error (SQLite's
    /// result would be undefined), so it traps like an array index.
    private func columnIndex(_ column: Int) -> Int32 {
        precondition(hasRow, "column read without a current row")
        precondition(column >= 0 && column < columnCount, "column \(column) is outside 0..<\(columnCount)")
        return Int32(column)
    }

    private func check(_ result: Int32, _ operation: String) throws(StorageError) {
        guard result == SQLITE_OK else {
            throw .sqlite(result, operation, connection: database.handle)
        }
    }
}
