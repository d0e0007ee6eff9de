/// One SQL value: bound to a parameter of either store (SQLite binds it natively; PostgreSQL
/// sends numbers as decimal text and bytes in binary), or read from a SQLite column.
package enum SQLValue: Sendable, Hashable, ExpressibleByNilLiteral {
    /// A 64-bit signed integer (Unix seconds, counters, flags).
    case integer(Int64)
    /// A 64-bit IEEE float (`REAL`, `DOUBLE PRECISION`).
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Raw bytes (`BLOB`, `BYTEA`); an empty array is zero-length bytes, not NULL.
    case blob([UInt8])
    /// SQL NULL.
    case null

    /// `nil` is SQL NULL, so `statement.bind(nil, at: 3)` reads naturally.
    package init(nilLiteral: ()) { self = .null }
}
