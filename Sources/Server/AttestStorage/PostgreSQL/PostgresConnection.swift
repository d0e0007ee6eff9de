internal import CLibPQ
internal import Glibc

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
///
/// Every statement has a client-side deadline (`PostgresSettings.answerTimeoutMilliseconds`):
/// it is sent with libpq's asynchronous calls on a non-blocking socket and its answer awaited
/// with `poll(2)`. Why: TCP keepalives and `tcp_user_timeout` notice a peer whose kernel stops
/// answering, but not a server or proxy that hangs while its kernel still acknowledges; the
/// server's own `statement_timeout` cannot fire there either. A statement past its deadline
/// gives the connection up (`abandoned`, never used again: the pool replaces it); the statement
/// is not cancelled, because a cancel request needs a new connection to the same silent server
/// and libpq waits for its answer without a limit, and the server's `statement_timeout` ends it
/// on the server's side anyway.
package final class PostgresConnection {
    private let handle: OpaquePointer
    /// SQL text to the name of its prepared statement on this connection.
    private var prepared: [String: String] = [:]
    /// How many statements (`execute` or `query` calls) this connection has sent.
    private(set) var statementsSent = 0
    /// How long a statement's answer may take before the connection is given up.
    private let answerTimeoutMilliseconds: Int
    /// Set when a statement's answer did not come in time (or could not be awaited): the
    /// connection is not used again (a late answer would be taken for the next statement's),
    /// and the statement may have run, so it must not simply be sent again elsewhere.
    private(set) var abandoned = false

    /// Connects with `settings`; throws `unavailable` (server down, refused, timed out) or
    /// `misuse` (a malformed URI), never with the password (nor libpq's message about a
    /// malformed URI, which can quote it).
    package init(_ settings: PostgresSettings) throws(StorageError) {
        try settings.validateURI()
        // Defaults first, the operator's URI last: anything the URI sets wins (expand_dbname).
        // plan_cache_mode: every statement attestd prepares is a point lookup or update whose plan
        // does not depend on its parameters, so each is planned once per connection. Left to
        // choose, PostgreSQL kept re-planning the grouped token lookup at every execution once the
        // tables had statistics (custom plans looked cheaper than the generic one), which cost
        // authorize much of its rate on a large table (docs/BENCHMARKS.md).
        // Keepalives and tcp_user_timeout: a pooled connection whose peer vanished (a host down,
        // a firewall dropping the flow) fails within seconds instead of after the kernel's hours.
        let defaults = [
            ("connect_timeout", String(settings.connectTimeoutSeconds)),
            (
                "options",
                "-c statement_timeout=\(settings.statementTimeoutMilliseconds) -c lock_timeout=\(settings.statementTimeoutMilliseconds)"
                    + " -c plan_cache_mode=force_generic_plan"
            ),
            ("application_name", "attestd"),
        ]
        let keys = (defaults + PostgresSettings.keepaliveDefaults).map(\.0) + ["dbname"]
        let values = (defaults + PostgresSettings.keepaliveDefaults).map(\.1) + [settings.uri]
        let connection = Self.withCStrings(keys) { keyPointers in
            Self.withCStrings(values) { valuePointers in PQconnectdbParams(keyPointers, valuePointers, 1) }
        }
        guard let connection else { throw .unavailable("connect: libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(PQerrorMessage(connection))
            PQfinish(connection)
            throw .unavailable("connect to \(settings.redactedURI): \(message)")
        }
        // Non-blocking: sending never waits for the socket, and PQfinish never blocks on a silent peer.
        guard PQsetnonblocking(connection, 1) == 0 else {
            let message = Self.message(PQerrorMessage(connection))
            PQfinish(connection)
            throw .unavailable("connect to \(settings.redactedURI): cannot make the connection non-blocking: \(message)")
        }
        handle = connection
        answerTimeoutMilliseconds = settings.answerTimeoutMilliseconds
    }

    deinit { PQfinish(handle) }

    /// False once the server closed the connection, a network error broke it, or a statement's
    /// answer did not come in time.
    package var isHealthy: Bool { !abandoned && PQstatus(handle) == CONNECTION_OK }

    /// The value of libpq connection option `keyword` in force on this connection (tests of the
    /// defaults attestd adds and of the URI overriding them); nil when unset.
    package func option(_ keyword: String) -> String? {
        guard let options = PQconninfo(handle) else { return nil }
        defer { PQconninfoFree(options) }
        var index = 0
        while let name = options[index].keyword {
            if String(cString: name) == keyword { return options[index].val.map { String(cString: $0) } }
            index += 1
        }
        return nil
    }

    /// Runs a script of one or more statements with no parameters (migrations, `BEGIN`, `COMMIT`).
    package func execute(_ sql: String) throws(StorageError) {
        statementsSent += 1
        let result = try answer("execute") { PQsendQuery($0, sql) }
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
        let result = try answer("query") { handle in
            Self.withBuffers(buffers) { values in
                PQsendQueryPrepared(handle, name, Int32(arguments.count), values, lengths, formats, 1)
            }
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
        let result = try answer("prepare") { PQsendPrepare($0, name, sql, Int32(parameterCount), nil) }
        defer { PQclear(result) }
        try check(result, "prepare")
        prepared[sql] = name
        return name
    }

    /// Sends a command with `send` (a `PQsend...` call) and returns its result: the first that
    /// failed, or the last (a script's statements each give one), for `check`. Waits at most the
    /// answer timeout in all; past it the connection is given up and `unavailable` thrown.
    private func answer(_ operation: String, send: (OpaquePointer) -> Int32) throws(StorageError) -> OpaquePointer? {
        guard !abandoned else { throw .unavailable("\(operation): this connection was given up after a statement timed out") }
        let deadline = ContinuousClock.now + .milliseconds(answerTimeoutMilliseconds)
        guard send(handle) == 1 else { return nil }
        // The command may sit in libpq's buffer until the socket takes it.
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            guard flushed == 1 else { return nil }
            let ready = try wait(for: Int16(POLLIN | POLLOUT), until: deadline, operation)
            if ready & Int16(POLLIN) != 0, PQconsumeInput(handle) != 1 { return nil }
        }
        var kept: OpaquePointer?
        while true {
            while PQisBusy(handle) == 1 {
                _ = try wait(for: Int16(POLLIN), until: deadline, operation)
                guard PQconsumeInput(handle) == 1 else {
                    PQclear(kept)
                    return nil
                }
            }
            // Every result must be taken until libpq answers NULL before the next command.
            guard let result = PQgetResult(handle) else { return kept }
            if let earlier = kept, !Self.succeeded(earlier) {
                PQclear(result)
            } else {
                PQclear(kept)
                kept = result
            }
        }
    }

    /// Waits until the socket is ready for `events` or the deadline passes (then the connection
    /// is given up). Returns the events that are ready.
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant, _ operation: String) throws(StorageError) -> Int16 {
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw .unavailable("\(operation): the connection has no socket") }
        while true {
            let left = deadline - ContinuousClock.now
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            guard milliseconds > 0 else {
                abandoned = true
                throw .unavailable(
                    "\(operation): PostgreSQL gave no answer within \(answerTimeoutMilliseconds) ms; the connection is given up")
            }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: milliseconds))
            if ready > 0 { return descriptor.revents }
            if ready < 0 && errno != EINTR {
                abandoned = true
                throw .unavailable("\(operation): poll failed (errno \(errno)); the connection is given up")
            }
        }
    }

    private static func succeeded(_ result: OpaquePointer) -> Bool {
        let status = PQresultStatus(result)
        return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK
    }

    /// Maps a failed result (or a broken connection) to a `StorageError` by SQLSTATE class.
    private func check(_ result: OpaquePointer?, _ operation: String) throws(StorageError) {
        if let result, Self.succeeded(result) { return }
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

extension PostgresSettings {
    /// Throws `misuse` when libpq cannot parse the URI, without libpq's message: it quotes the
    /// offending part, which can be the password (a raw `%` in it; decision 0023).
    func validateURI() throws(StorageError) {
        let advice = "percent-encode reserved characters in the user name and password (% as %25, @ as %40, / as %2F, : as %3A)"
        // A raw '@' or '/' in the password makes libpq read part of it as the host, port or
        // database, which its connection errors then quote.
        if let userInfo, userInfo.contains(where: { $0 == "@" || $0 == "/" }) {
            throw .misuse("the PostgreSQL URI \(redactedURI) is ambiguous: \(advice)")
        }
        var message: UnsafeMutablePointer<CChar>?
        let options = PQconninfoParse(uri, &message)
        if let message { PQfreemem(message) }
        guard let options else {
            throw .misuse(
                "the PostgreSQL URI \(redactedURI) cannot be parsed (libpq's reason is not shown: it can quote the password); \(advice)")
        }
        PQconninfoFree(options)
    }
}
