import AttestCrypto

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
