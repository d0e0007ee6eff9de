/// One SQLite value, as bound to a parameter or read from a column.
package enum SQLiteValue: Sendable, Hashable, ExpressibleByNilLiteral {
    /// A 64-bit signed integer (Unix seconds, counters, flags).
    case integer(Int64)
    /// A 64-bit IEEE float.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Raw bytes; an empty array is a zero-length blob, not NULL.
    case blob([UInt8])
    /// SQL NULL.
    case null

    /// `nil` is SQL NULL, so `statement.bind(nil, at: 3)` reads naturally.
    package init(nilLiteral: ()) { self = .null }
}
