/// One row as a store reads it back, in either dialect, with typed column access that throws on
/// NULL or a wrong type (as GRDB's `Row` and postgres-nio's `PostgresRow` do): a decoder that
/// asks for the wrong column fails loudly instead of reading `""` or `0`.
package struct SQLRow: Sendable, Equatable {
    /// The row's values, in the statement's column order.
    package let values: [SQLValue]

    package init(_ values: [SQLValue]) {
        self.values = values
    }

    /// The number of columns.
    package var count: Int { values.count }

    /// The value of `column`; `statementFailed` past the last column.
    package func value(_ column: Int) throws(StorageError) -> SQLValue {
        guard values.indices.contains(column) else {
            throw .statementFailed("column \(column) was read from a row of \(values.count) columns")
        }
        return values[column]
    }

    /// A whole number; throws on NULL or another type.
    package func int64(_ column: Int) throws(StorageError) -> Int64 {
        guard case .integer(let number) = try value(column) else { throw Self.mismatch(column, "an integer", try value(column)) }
        return number
    }

    /// A whole number or NULL.
    package func optionalInt64(_ column: Int) throws(StorageError) -> Int64? {
        try value(column) == .null ? nil : try int64(column)
    }

    /// A floating-point number (an integer is widened: SQLite stores 1.0 as 1); throws on NULL or another type.
    package func double(_ column: Int) throws(StorageError) -> Double {
        switch try value(column) {
        case .real(let number): return number
        case .integer(let number): return Double(number)
        case let other: throw Self.mismatch(column, "a number", other)
        }
    }

    /// Text; throws on NULL or another type.
    package func text(_ column: Int) throws(StorageError) -> String {
        guard case .text(let text) = try value(column) else { throw Self.mismatch(column, "text", try value(column)) }
        return text
    }

    /// Text or NULL.
    package func optionalText(_ column: Int) throws(StorageError) -> String? {
        try value(column) == .null ? nil : try text(column)
    }

    /// Bytes; throws on NULL or another type.
    package func blob(_ column: Int) throws(StorageError) -> [UInt8] {
        guard case .blob(let bytes) = try value(column) else { throw Self.mismatch(column, "bytes", try value(column)) }
        return bytes
    }

    /// Bytes or NULL.
    package func optionalBlob(_ column: Int) throws(StorageError) -> [UInt8]? {
        try value(column) == .null ? nil : try blob(column)
    }

    /// Whether the column is NULL.
    package func isNull(_ column: Int) throws(StorageError) -> Bool {
        try value(column) == .null
    }

    /// The columns from `offset` on: a record decodes wherever a joined statement put its columns.
    package func columns(from offset: Int) -> SQLRow {
        SQLRow(Array(values.dropFirst(offset)))
    }

    private static func mismatch(_ column: Int, _ expected: String, _ found: SQLValue) -> StorageError {
        let kind =
            switch found {
            case .null: "NULL"
            case .integer: "an integer"
            case .real: "a real number"
            case .text: "text"
            case .blob: "bytes"
            }
        // Never the value itself: it may be a key or a hash.
        return .statementFailed("column \(column) holds \(kind) where the store expects \(expected)")
    }
}

/// Reads a row's columns in order, as a record's `init(row:)` declares them, and checks that the
/// record read every column the statement selected.
package struct SQLRowReader {
    private let row: SQLRow
    private var next = 0

    package init(_ row: SQLRow) {
        self.row = row
    }

    package mutating func int64() throws(StorageError) -> Int64 { try take(SQLRow.int64) }
    package mutating func optionalInt64() throws(StorageError) -> Int64? { try take(SQLRow.optionalInt64) }
    package mutating func double() throws(StorageError) -> Double { try take(SQLRow.double) }
    package mutating func text() throws(StorageError) -> String { try take(SQLRow.text) }
    package mutating func optionalText() throws(StorageError) -> String? { try take(SQLRow.optionalText) }
    package mutating func blob() throws(StorageError) -> [UInt8] { try take(SQLRow.blob) }
    package mutating func optionalBlob() throws(StorageError) -> [UInt8]? { try take(SQLRow.optionalBlob) }

    /// The next column read by `read`, and the reader one column on.
    private mutating func take<T>(_ read: (SQLRow) -> (Int) throws(StorageError) -> T) throws(StorageError) -> T {
        let value = try read(row)(next)
        next += 1
        return value
    }

    /// A whole number that must fit `T` (a counter in `UInt32`, a limit in `Int`).
    package mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws(StorageError) -> T {
        let column = next
        let number = try int64()
        guard let value = T(exactly: number) else { throw .statementFailed("column \(column) holds a number outside \(T.self)") }
        return value
    }

    /// A whole number that must fit `T`, or NULL.
    package mutating func optionalInteger<T: FixedWidthInteger>(_ type: T.Type) throws(StorageError) -> T? {
        let column = next
        guard let number = try optionalInt64() else { return nil }
        guard let value = T(exactly: number) else { throw .statementFailed("column \(column) holds a number outside \(T.self)") }
        return value
    }

    /// A text column spelling one of `T`'s cases.
    package mutating func enumeration<T: RawRepresentable>(_ type: T.Type) throws(StorageError) -> T where T.RawValue == String {
        let column = next
        let raw = try text()
        guard let value = T(rawValue: raw) else { throw .statementFailed("column \(column) holds no \(T.self)") }
        return value
    }

    /// A text column spelling one of `T`'s cases, or NULL.
    package mutating func optionalEnumeration<T: RawRepresentable>(_ type: T.Type) throws(StorageError) -> T?
    where T.RawValue == String {
        let column = next
        guard let raw = try optionalText() else { return nil }
        guard let value = T(rawValue: raw) else { throw .statementFailed("column \(column) holds no \(T.self)") }
        return value
    }

    /// Whether the next column is NULL, without reading it.
    package func nextIsNull() throws(StorageError) -> Bool { try row.isNull(next) }

    /// Skips `count` columns (a record that is absent: a run of NULLs).
    package mutating func skip(_ count: Int) { next += count }

    /// The number of columns read so far.
    package var position: Int { next }

    /// Throws unless every column of the row was read: a column list and a decoder that disagree
    /// fail at once.
    package func finish() throws(StorageError) {
        guard next == row.count else { throw .statementFailed("a record read \(next) of the row's \(row.count) columns") }
    }
}
