extension CBORValue {
    /// The encoding with shortest-form heads and definite lengths (chunked strings stay chunked).
    /// Exists for the synthetic device only (`AttestSimulator`, shipped with `attestctl simulate`)
    /// and for round-tripping test vectors: the verifier never re-encodes.
    package var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    /// A byte or text string (major type 2 or 3) of definite length.
    private static func string(_ major: UInt8, _ bytes: [UInt8], into out: inout [UInt8]) {
        head(major, UInt64(bytes.count), into: &out)
        out += bytes
    }

    /// An indefinite-length string: the `start` byte, each chunk, then the break byte.
    private static func indefinite(_ start: UInt8, _ chunks: [CBORValue], into out: inout [UInt8]) {
        out.append(start)
        for chunk in chunks { chunk.encode(into: &out) }
        out.append(0xFF)
    }

    private static func head(_ major: UInt8, _ argument: UInt64, into out: inout [UInt8]) {
        let type = major << 5
        switch argument {
        case 0..<24: out.append(type | UInt8(argument))
        case 24...0xFF: out += [type | 24, UInt8(argument)]
        case 0x100...0xFFFF: out += [type | 25] + bigEndian(argument, width: 2)
        case 0x1_0000...0xFFFF_FFFF: out += [type | 26] + bigEndian(argument, width: 4)
        default: out += [type | 27] + bigEndian(argument, width: 8)
        }
    }

    private static func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
        (0..<width).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    private func encode(into out: inout [UInt8]) {
        switch self {
        case .unsigned(let value): Self.head(0, value, into: &out)
        case .negative(let value): Self.head(1, value, into: &out)
        case .bytes(let bytes): Self.string(2, bytes, into: &out)
        case .byteChunks(let chunks): Self.indefinite(0x5F, chunks.map(CBORValue.bytes), into: &out)
        case .text(let text): Self.string(3, Array(text.utf8), into: &out)
        case .textChunks(let chunks): Self.indefinite(0x7F, chunks.map(CBORValue.text), into: &out)
        case .array(let items):
            Self.head(4, UInt64(items.count), into: &out)
            for item in items { item.encode(into: &out) }
        case .map(let entries):
            Self.head(5, UInt64(entries.count), into: &out)
            for entry in entries {
                entry.key.encode(into: &out)
                entry.value.encode(into: &out)
            }
        case .tagged(let tag, let value):
            Self.head(6, tag, into: &out)
            value.encode(into: &out)
        case .simple(let value):
            if value < 24 { out.append(0xE0 | value) } else { out += [0xF8, value] }
        case .bool(let value): out.append(value ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        case .float(let value): out += [0xFB] + Self.bigEndian(value.bitPattern, width: 8)
        }
    }
}
