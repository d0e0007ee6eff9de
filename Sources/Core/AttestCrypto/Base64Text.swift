/// RFC 4648 base64 without Foundation: standard (section 4, padded) and base64url (section 5,
/// unpadded), both strict. Strict means canonical: no whitespace, no other alphabet, no missing or
/// extra padding, and zero unused bits, so every byte string has exactly one accepted text.
package enum Base64Text {
    /// Which of the two encodings.
    package enum Alphabet: Sendable {
        /// `A-Z a-z 0-9 + /`, padded with `=`.
        case standard
        /// `A-Z a-z 0-9 - _`, no padding.
        case url
    }

    private static let standardDigits = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlDigits = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let standardValues = values(of: standardDigits)
    private static let urlValues = values(of: urlDigits)

    private static func values(of digits: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, digit) in digits.enumerated() { table[Int(digit)] = UInt8(value) }
        return table
    }

    /// The encoding of `bytes`.
    package static func encode(_ bytes: [UInt8], _ alphabet: Alphabet = .standard) -> String {
        let digits = alphabet == .standard ? standardDigits : urlDigits
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [digits[Int(n >> 18 & 63)], digits[Int(n >> 12 & 63)], digits[Int(n >> 6 & 63)], digits[Int(n & 63)]]
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let n = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            out += [digits[Int(n >> 18 & 63)], digits[Int(n >> 12 & 63)]]
            if rest == 2 { out.append(digits[Int(n >> 6 & 63)]) }
            if alphabet == .standard { out += [UInt8](repeating: UInt8(ascii: "="), count: 3 - rest) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of a canonical encoding, or nil for anything else.
    package static func decode(_ text: String, _ alphabet: Alphabet = .standard) -> [UInt8]? {
        var input = Array(text.utf8)
        if alphabet == .standard {
            guard input.count % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, input.last == UInt8(ascii: "=") {
                input.removeLast()
                padding += 1
            }
        } else {
            guard input.count % 4 != 1 else { return nil }
        }
        let table = alphabet == .standard ? standardValues : urlValues
        var out: [UInt8] = []
        out.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in input {
            let value = table[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Canonical: the bits left over must be zero.
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }

    /// A PEM block (RFC 7468): `-----BEGIN LABEL-----`, the base64 in 64-character lines, the end line.
    package static func pem(label: String, der: [UInt8]) -> String {
        let body = Array(encode(der).utf8)
        var lines = ["-----BEGIN \(label)-----"]
        var start = 0
        while start < body.count {
            lines.append(String(decoding: body[start..<min(start + 64, body.count)], as: UTF8.self))
            start += 64
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }
}
