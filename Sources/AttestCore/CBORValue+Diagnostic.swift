extension CBORValue {
    /// RFC 8949 section 8 diagnostic notation, for debugging output and test vectors.
    package var diagnosticNotation: String {
        switch self {
        case .unsigned(let value): return String(value)
        case .negative(let value): return value == .max ? "-18446744073709551616" : "-\(value + 1)"
        case .bytes(let bytes): return Self.hexString(bytes)
        case .byteChunks(let chunks): return "(_ " + chunks.map(Self.hexString).joined(separator: ", ") + ")"
        case .text(let text): return Self.quoted(text)
        case .textChunks(let chunks): return "(_ " + chunks.map(Self.quoted).joined(separator: ", ") + ")"
        case .array(let items): return "[" + items.map(\.diagnosticNotation).joined(separator: ", ") + "]"
        case .map(let entries):
            return "{"
                + entries.map { "\($0.key.diagnosticNotation): \($0.value.diagnosticNotation)" }
                .joined(separator: ", ") + "}"
        case .tagged(let tag, let value): return "\(tag)(\(value.diagnosticNotation))"
        case .simple(let value): return "simple(\(value))"
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        case .undefined: return "undefined"
        case .float(let value):
            if value.isNaN { return "NaN" }
            if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
            return String(describing: value)
        }
    }

    private static func hexString(_ bytes: [UInt8]) -> String {
        "h'" + Hex.encode(bytes) + "'"
    }

    private static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Lowercase hexadecimal.
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Lowercase hex of `bytes`.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes of an even-length hex string (either case), nil for anything else.
    package static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
