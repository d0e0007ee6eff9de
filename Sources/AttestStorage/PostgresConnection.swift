internal import CLibPQ

/// The rows a statement returned, read in binary format (`BIGINT` as 8 bytes big-endian, `TEXT`
/// as UTF-8, `BYTEA` as raw bytes), copied out of libpq's result so nothing C outlives the call.
package struct PostgresRows: Sendable {
    /// `cells[row][column]`; nil is SQL NULL.
    package let cells: [[[UInt8]?]]
    /// Rows changed by an INSERT, UPDATE or DELETE (`PQcmdTuples`); 0 for a SELECT.
    package let changed: Int
    /// Each column's type OID (`PQftype`), which says how to read its binary cells.
    package var types: [UInt32] = []

    /// The number of rows.
    package var count: Int { cells.count }

    /// A `BIGINT` column (8 bytes, network order); 0 for NULL or another width.
    package func int64(_ row: Int, _ column: Int) -> Int64 {
        guard let bytes = cells[row][column], bytes.count == 8 else { return 0 }
        return bytes.reduce(Int64(0)) { ($0 << 8) | Int64($1) }
    }

    /// A `DOUBLE PRECISION` column (8 bytes IEEE 754, network order); 0 for NULL or another width.
    package func double(_ row: Int, _ column: Int) -> Double {
        guard let bytes = cells[row][column], bytes.count == 8 else { return 0 }
        return Double(bitPattern: bytes.reduce(UInt64(0)) { ($0 << 8) | UInt64($1) })
    }

    /// A `TEXT` column; nil for NULL.
    package func string(_ row: Int, _ column: Int) -> String? {
        cells[row][column].map { String(decoding: $0, as: UTF8.self) }
    }

    /// A `BYTEA` column; nil for NULL.
    package func bytes(_ row: Int, _ column: Int) -> [UInt8]? { cells[row][column] }

    /// Whether the cell is SQL NULL.
    package func isNull(_ row: Int, _ column: Int) -> Bool { cells[row][column] == nil }

    /// The same rows from column `offset` on: one decoder reads a record wherever a statement
    /// that joins several records put its columns.
    package func columns(from offset: Int) -> PostgresRows {
        PostgresRows(cells: cells.map { Array($0.dropFirst(offset)) }, changed: changed, types: Array(types.dropFirst(offset)))
    }
}

/// Arrays bound as one parameter, so that one prepared statement takes any number of values
/// (`token_hash = ANY ($1)`).
package enum PostgresArrays {
    /// A one-dimensional `BYTEA[]` in PostgreSQL's binary array format, to bind as a binary
    /// parameter: dimensions, flags (no NULLs), element type 17 (bytea), length and lower bound
    /// 1, then each element's length and bytes; every integer 4 bytes big-endian.
    package static func bytea(_ elements: [[UInt8]]) -> SQLValue {
        func int32(_ value: Int) -> [UInt8] { withUnsafeBytes(of: Int32(value).bigEndian, Array.init) }
        var bytes = int32(1) + int32(0) + int32(17) + int32(elements.count) + int32(1)
        for element in elements { bytes += int32(element.count) + element }
        return .blob(bytes)
    }
}

/// One PostgreSQL connection: the only owner of its `PGconn*`, finished in `deinit`.
///
/// Statements run as named prepared statements, prepared on first use and reused until the
/// connection is replaced. Every libpq result is checked; a failure becomes a `StorageError`
/// whose reason carries PostgreSQL's message and SQLSTATE, never a bound value or the password.
/// Not `Sendable`: one thread uses a connection at a time (the pool hands it out).
package final class PostgresConnection {
    private let handle: OpaquePointer
    /// SQL text to the name of its prepared statement on this connection.
    private var prepared: [String: String] = [:]
    /// How many statements (`execute` or `query` calls) this connection has sent.
    private(set) var statementsSent = 0

    /// Connects with `settings`; throws `unavailable` (server down, refused, timed out) or
    /// `misuse` (a malformed URI), with libpq's message and never the password.
    package init(_ settings: PostgresSettings) throws(StorageError) {
        // Defaults first, the operator's URI last: anything the URI sets wins (expand_dbname).
        // plan_cache_mode: every statement attestd prepares is a point lookup or update whose plan
        // does not depend on its parameters, so each is planned once per connection. Left to
        // choose, PostgreSQL kept re-planning the grouped token lookup at every execution once the
        // tables had statistics (custom plans looked cheaper than the generic one), which halved
        // authorize on a table of a million tokens (docs/BENCHMARKS.md).
        let keys = ["connect_timeout", "options", "application_name", "dbname"]
        let values = [
            String(settings.connectTimeoutSeconds),
            "-c statement_timeout=\(settings.statementTimeoutMilliseconds) -c lock_timeout=\(settings.statementTimeoutMilliseconds)"
                + " -c plan_cache_mode=force_generic_plan",
            "attestd", settings.uri,
        ]
        let connection = Self.withCStrings(keys) { keyPointers in
            Self.withCStrings(values) { valuePointers in PQconnectdbParams(keyPointers, valuePointers, 1) }
        }
        guard let connection else { throw .unavailable("connect: libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(PQerrorMessage(connection))
            PQfinish(connection)
            throw .unavailable("connect to \(settings.redactedURI): \(message)")
        }
        handle = connection
    }

    deinit { PQfinish(handle) }

    /// False once the server closed the connection or a network error broke it.
    package var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Runs a script of one or more statements with no parameters (migrations, `BEGIN`, `COMMIT`).
    package func execute(_ sql: String) throws(StorageError) {
        statementsSent += 1
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, "execute")
    }

    /// Runs one statement with `$1`, `$2` ... parameters as a prepared statement; returns its rows.
    @discardableResult
    package func query(_ sql: String, _ arguments: [SQLValue] = []) throws(StorageError) -> PostgresRows {
        statementsSent += 1
        let name = try preparedName(sql, parameterCount: arguments.count)
        var buffers: [[UInt8]?] = []
        var formats: [Int32] = []
        for argument in arguments {
            switch argument {
            case .integer(let value): buffers.append(Array(String(value).utf8) + [0]); formats.append(0)
            case .real(let value): buffers.append(Array(String(value).utf8) + [0]); formats.append(0)
            case .text(let value):
                // Why: libpq sends text parameters as C strings, so a NUL would silently cut the
                // value (`clid_<real>\0junk` would select the real integration). Callers validate
                // their input; reaching here with a NUL is a bug, refused rather than truncated.
                let bytes = Array(value.utf8)
                guard !bytes.contains(0) else {
                    throw StorageError.misuse("a text parameter holds a NUL byte, which PostgreSQL cannot take")
                }
                buffers.append(bytes + [0])
                formats.append(0)
            case .blob(let value): buffers.append(value); formats.append(1)
            case .null: buffers.append(nil); formats.append(0)
            }
        }
        let lengths = buffers.map { Int32($0?.count ?? 0) }
        let result = Self.withBuffers(buffers) { values in
            PQexecPrepared(handle, name, Int32(arguments.count), values, lengths, formats, 1)
        }
        defer { PQclear(result) }
        try check(result, "query")
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var cells: [[[UInt8]?]] = []
        cells.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            var line: [[UInt8]?] = []
            for column in 0..<columnCount {
                if PQgetisnull(result, Int32(row), Int32(column)) == 1 {
                    line.append(nil)
                } else {
                    let length = Int(PQgetlength(result, Int32(row), Int32(column)))
                    let start = PQgetvalue(result, Int32(row), Int32(column))
                    line.append(start.map { Array(UnsafeRawBufferPointer(start: $0, count: length)) } ?? [])
                }
            }
            cells.append(line)
        }
        let changed = PQcmdTuples(result).map { Int(String(cString: $0)) ?? 0 } ?? 0
        let types = (0..<columnCount).map { UInt32(PQftype(result, Int32($0))) }
        return PostgresRows(cells: cells, changed: changed, types: types)
    }

    private func preparedName(_ sql: String, parameterCount: Int) throws(StorageError) -> String {
        if let name = prepared[sql] { return name }
        let name = "s\(prepared.count + 1)"
        let result = PQprepare(handle, name, sql, Int32(parameterCount), nil)
        defer { PQclear(result) }
        try check(result, "prepare")
        prepared[sql] = name
        return name
    }

    /// Maps a failed result (or a broken connection) to a `StorageError` by SQLSTATE class.
    private func check(_ result: OpaquePointer?, _ operation: String) throws(StorageError) {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return }
        let state = result.flatMap { PQresultErrorField($0, CLibPQ_diagSQLState()) }.map { String(cString: $0) } ?? ""
        let message = Self.message(
            result.flatMap { PQresultErrorMessage($0) }.flatMap { $0.pointee == 0 ? nil : $0 } ?? PQerrorMessage(handle))
        let reason = "\(operation) failed" + (state.isEmpty ? "" : " (SQLSTATE \(state))") + ": \(message)"
        if !isHealthy { throw .unavailable(reason) }
        throw StorageError(Self.code(forSQLState: state), reason)
    }

    /// The storage code for a SQLSTATE (PostgreSQL Appendix A).
    static func code(forSQLState state: String) -> StorageError.Code {
        switch state {
        case "40001", "40P01":
            // Serialization failure or deadlock: the transaction can simply run again.
            return .conflict
        case "55P03", "57014":
            // lock_timeout or statement_timeout ran out.
            return .busy
        case "53100": return .full
        case "25006": return .readOnly
        case "57P01", "57P02", "57P03": return .unavailable
        default: break
        }
        switch state.prefix(2) {
        case "23": return .constraint
        case "08": return .unavailable
        case "53", "58": return .io
        case "XX": return .corrupt
        case "42": return .statementFailed
        default: return .statementFailed
        }
    }

    private static func message(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "no message" }
        return String(cString: pointer).split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        withBuffers(strings.map { Array($0.utf8) + [0] } + [nil], body)
    }

    private static func withBuffers<T>(_ buffers: [[UInt8]?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        let copies: [UnsafeMutablePointer<CChar>?] = buffers.map { buffer in
            guard let buffer else { return nil }
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, buffer.count))
            buffer.withUnsafeBytes { raw in
                if let base = raw.baseAddress { copy.update(from: base.assumingMemoryBound(to: CChar.self), count: buffer.count) }
            }
            return copy
        }
        defer { copies.forEach { $0?.deallocate() } }
        return body(copies.map { UnsafePointer($0) })
    }
}
