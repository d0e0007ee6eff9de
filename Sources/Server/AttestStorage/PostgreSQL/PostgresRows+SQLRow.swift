extension PostgresRows {
    /// PostgreSQL's type OIDs the stores read (`pg_type.oid`, fixed since PostgreSQL 7).
    enum TypeOID {
        static let bool: UInt32 = 16
        static let bytea: UInt32 = 17
        static let name: UInt32 = 19
        static let int8: UInt32 = 20
        static let int2: UInt32 = 21
        static let int4: UInt32 = 23
        static let text: UInt32 = 25
        static let float8: UInt32 = 701
        static let varchar: UInt32 = 1043
    }

    /// The rows as `SQLRow`s: each binary cell read by its column's type; a type the stores do
    /// not use is `statementFailed`, never a guess.
    package func rows() throws(StorageError) -> [SQLRow] {
        var rows: [SQLRow] = []
        rows.reserveCapacity(cells.count)
        for line in cells {
            var values: [SQLValue] = []
            values.reserveCapacity(line.count)
            for (column, cell) in line.enumerated() {
                values.append(try Self.value(cell, type: column < types.count ? types[column] : 0, column: column))
            }
            rows.append(SQLRow(values))
        }
        return rows
    }

    private static func value(_ cell: [UInt8]?, type: UInt32, column: Int) throws(StorageError) -> SQLValue {
        guard let cell else { return .null }
        switch type {
        case TypeOID.int8, TypeOID.int4, TypeOID.int2:
            guard [2, 4, 8].contains(cell.count) else { throw .statementFailed("column \(column) is an integer of \(cell.count) bytes") }
            // Big-endian two's complement of 2, 4 or 8 bytes: sign-extend from the first byte.
            let first = Int64(Int8(bitPattern: cell[0]))
            return .integer(cell.dropFirst().reduce(first) { ($0 << 8) | Int64($1) })
        case TypeOID.bool:
            guard cell.count == 1 else { throw .statementFailed("column \(column) is a boolean of \(cell.count) bytes") }
            return .integer(cell[0] == 0 ? 0 : 1)
        case TypeOID.float8:
            guard cell.count == 8 else { throw .statementFailed("column \(column) is a double of \(cell.count) bytes") }
            return .real(Double(bitPattern: cell.reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }))
        case TypeOID.text, TypeOID.varchar, TypeOID.name:
            return .text(String(decoding: cell, as: UTF8.self))
        case TypeOID.bytea:
            return .blob(cell)
        default:
            throw .statementFailed("column \(column) has type OID \(type), which the store does not read")
        }
    }
}
