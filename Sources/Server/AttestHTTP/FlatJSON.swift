import AttestCrypto

/// A strict reader for the request bodies of this API: one JSON object whose values are all
/// strings (RFC 8259). Duplicate keys, nesting, non-string values, invalid escapes, invalid
/// UTF-8 and trailing bytes are refused, so no key is ever silently first- or last-wins.
enum FlatJSON {
    /// Why a body was refused (becomes the `reason` of a 400).
    enum Failure: Error, Equatable {
        case invalid(String)
        case duplicateKey
    }

    /// A member's value in the admin API's bodies: a string, an array of strings, a whole
    /// number, a boolean or null. Nothing nests deeper.
    enum Value: Equatable {
        case string(String)
        case strings([String])
        case integer(Int)
        case bool(Bool)
        case null
    }

    /// The object's members, every value a string.
    static func parse(_ bytes: [UInt8]) throws(Failure) -> [String: String] {
        var strings: [String: String] = [:]
        for (key, value) in try values(bytes, stringsOnly: true) {
            guard case .string(let text) = value else { throw .invalid("every value must be a string") }
            strings[key] = text
        }
        return strings
    }

    /// The object's members, each a `Value` (the admin API's bodies).
    static func values(_ bytes: [UInt8]) throws(Failure) -> [String: Value] {
        try values(bytes, stringsOnly: false)
    }

    private static func values(_ bytes: [UInt8], stringsOnly: Bool) throws(Failure) -> [String: Value] {
        var reader = Reader(bytes: bytes)
        reader.skipWhitespace()
        try reader.expect(UInt8(ascii: "{"))
        var members: [String: Value] = [:]
        reader.skipWhitespace()
        if reader.peek() == UInt8(ascii: "}") {
            reader.index += 1
        } else {
            while true {
                reader.skipWhitespace()
                let key = try reader.string()
                reader.skipWhitespace()
                try reader.expect(UInt8(ascii: ":"))
                reader.skipWhitespace()
                guard !stringsOnly || reader.peek() == UInt8(ascii: "\"") else { throw .invalid("every value must be a string") }
                let value = try reader.value()
                guard members.updateValue(value, forKey: key) == nil else { throw .duplicateKey }
                reader.skipWhitespace()
                if reader.peek() == UInt8(ascii: ",") {
                    reader.index += 1
                    continue
                }
                try reader.expect(UInt8(ascii: "}"))
                break
            }
        }
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw .invalid("bytes follow the JSON object") }
        return members
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        /// A string, an array of strings, a whole number (at most 15 digits), true, false or null.
        mutating func value() throws(Failure) -> Value {
            switch peek() {
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "["):
                index += 1
                var items: [String] = []
                skipWhitespace()
                if peek() == UInt8(ascii: "]") {
                    index += 1
                    return .strings(items)
                }
                while true {
                    skipWhitespace()
                    guard peek() == UInt8(ascii: "\"") else { throw .invalid("an array holds strings only") }
                    items.append(try string())
                    skipWhitespace()
                    if peek() == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    try expect(UInt8(ascii: "]"))
                    return .strings(items)
                }
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default:
                let negative = peek() == UInt8(ascii: "-")
                if negative { index += 1 }
                var digits: [UInt8] = []
                while let byte = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                    digits.append(byte)
                    index += 1
                }
                guard (1...15).contains(digits.count), digits.count == 1 || digits[0] != UInt8(ascii: "0"),
                    let number = Int(String(decoding: digits, as: UTF8.self))
                else { throw .invalid("a number must be a whole number of at most 15 digits") }
                guard let next = peek(), next != UInt8(ascii: "."), next != UInt8(ascii: "e"), next != UInt8(ascii: "E") else {
                    throw .invalid("a number must be a whole number")
                }
                return .integer(negative ? -number : number)
            }
        }

        mutating func literal(_ word: String, _ value: Value) throws(Failure) -> Value {
            for byte in word.utf8 { try expect(byte) }
            return value
        }

        mutating func expect(_ byte: UInt8) throws(Failure) {
            guard peek() == byte else { throw .invalid("expected '\(Character(Unicode.Scalar(byte)))'") }
            index += 1
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard index + 4 <= bytes.count else { throw .invalid("truncated \\u escape") }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw .invalid("bad \\u escape")
                }
                value = value << 4 | UInt32(digit)
            }
            index += 4
            return value
        }

        mutating func string() throws(Failure) -> String {
            try expect(UInt8(ascii: "\""))
            var out: [UInt8] = []
            while true {
                guard let byte = peek() else { throw .invalid("unterminated string") }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: out, as: UTF8.self) else { throw .invalid("string is not UTF-8") }
                    return text
                case UInt8(ascii: "\\"):
                    guard let escape = peek() else { throw .invalid("unterminated escape") }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            guard peek() == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                                throw .invalid("lone surrogate")
                            }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw .invalid("lone surrogate") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw .invalid("lone surrogate") }
                        out.append(contentsOf: Array(String(Character(unicode)).utf8))
                    default: throw .invalid("bad escape")
                    }
                case 0x00..<0x20: throw .invalid("control character in string")
                default: out.append(byte)
                }
            }
        }
    }
}

/// `application/x-www-form-urlencoded` bodies (RFC 7662 introspection requests).
enum FormBody {
    /// The pairs, or nil for malformed encoding (a pair without `=`, a bad `%` escape, text that is
    /// not UTF-8); duplicate names are refused (nil). One pass over the body, and a field that needs
    /// no decoding (introspection's `token=...`) is validated where it lies, not copied first.
    static func parse(_ bytes: [UInt8]) -> [String: String]? {
        guard !bytes.isEmpty else { return [:] }
        var fields: [String: String] = [:]
        var start = bytes.startIndex
        while true {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.endIndex
            let pair = bytes[start..<end]
            guard let equals = pair.firstIndex(of: UInt8(ascii: "=")), let name = decode(pair[..<equals]),
                let value = decode(pair[(equals + 1)...])
            else { return nil }
            guard fields.updateValue(value, forKey: name) == nil else { return nil }
            guard end < bytes.endIndex else { return fields }
            start = end + 1
        }
    }

    private static func decode(_ bytes: ArraySlice<UInt8>) -> String? {
        guard bytes.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else {
            return String(validating: bytes, as: UTF8.self)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                out.append(0x20)
            } else if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let value = Hex.decode(String(decoding: bytes[index + 1...index + 2], as: UTF8.self))
                else { return nil }
                out += value
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        return String(validating: out, as: UTF8.self)
    }
}
