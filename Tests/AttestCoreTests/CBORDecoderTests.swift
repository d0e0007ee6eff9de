import AttestCore
import AttestCrypto
import AttestTesting
import Foundation
import Testing

/// One entry of fixtures/cbor/appendix_a.json (RFC 7049 Appendix A).
struct AppendixVector: Decodable, Sendable, CustomTestStringConvertible {
    let hex: String
    let decoded: JSONValue?
    let diagnostic: String?
    var testDescription: String { hex }

    static func all() throws -> [AppendixVector] {
        try JSONDecoder().decode([AppendixVector].self, from: Fixtures.data("cbor/appendix_a.json"))
    }
}

/// A JSON value; numbers keep both their exact decimal and their nearest Double.
indirect enum JSONValue: Decodable, Sendable, Equatable {
    /// `exact` is nil for numbers outside Decimal's range (1e+300).
    case number(exact: Foundation.Decimal?, approximate: Double)
    case string(String)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let exact = try? container.decode(Foundation.Decimal.self) {
            self = .number(exact: exact, approximate: (try? container.decode(Double.self)) ?? .nan)
        } else if let approximate = try? container.decode(Double.self) {
            self = .number(exact: nil, approximate: approximate)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Whether a decoded CBOR item is this JSON value (RFC 8949 section 6.1; bignums exactly).
    func matches(_ value: CBORValue) -> Bool {
        switch (self, value) {
        case (.number(let exact, _), .unsigned(let n)): return exact == Foundation.Decimal(string: String(n))
        case (.number(let exact, _), .negative(let n)):
            return exact == Foundation.Decimal(string: "-" + BigDecimalText.string(bigEndian: Self.bytes(n), plusOne: true))
        case (.number(let exact, _), .tagged(2, .bytes(let b))):
            return exact == Foundation.Decimal(string: BigDecimalText.string(bigEndian: b))
        case (.number(let exact, _), .tagged(3, .bytes(let b))):
            return exact == Foundation.Decimal(string: "-" + BigDecimalText.string(bigEndian: b, plusOne: true))
        case (.number(_, let approximate), .float(let d)): return approximate == d
        case (.string(let s), _): return value.textValue == s
        case (.bool(let b), .bool(let c)): return b == c
        case (.null, .null): return true
        case (.array(let items), .array(let values)):
            return items.count == values.count && zip(items, values).allSatisfy { $0.matches($1) }
        case (.object(let object), .map(let entries)):
            return object.count == entries.count
                && entries.allSatisfy { entry in entry.key.textValue.flatMap { object[$0] }?.matches(entry.value) ?? false }
        default: return false
        }
    }

    private static func bytes(_ n: UInt64) -> [UInt8] { (0..<8).reversed().map { UInt8(truncatingIfNeeded: n >> (8 * UInt64($0))) } }
}

enum BigDecimalText {
    /// Decimal digits of an unsigned big-endian integer (plus one when asked).
    static func string(bigEndian bytes: [UInt8], plusOne: Bool = false) -> String {
        var digits: [Int] = [0]  // little-endian base 10
        for byte in bytes {
            var carry = Int(byte)
            for i in digits.indices {
                let v = digits[i] * 256 + carry
                digits[i] = v % 10
                carry = v / 10
            }
            while carry > 0 {
                digits.append(carry % 10)
                carry /= 10
            }
        }
        if plusOne {
            var i = 0
            while true {
                if i == digits.count { digits.append(0) }
                if digits[i] == 9 {
                    digits[i] = 0
                    i += 1
                } else {
                    digits[i] += 1
                    break
                }
            }
        }
        while digits.count > 1, digits.last == 0 { digits.removeLast() }
        return digits.reversed().map(String.init).joined()
    }
}

@Suite("CBOR decoder")
struct CBORDecoderTests {
    static let vectors = (try? AppendixVector.all()) ?? []

    @Test("the RFC Appendix A file holds 82 vectors")
    func vectorCount() {
        #expect(Self.vectors.count == 82)
    }

    @Test("decodes each RFC Appendix A vector as documented", arguments: vectors)
    func appendixA(_ vector: AppendixVector) throws {
        let bytes = try #require(Hex.decode(vector.hex))
        if vector.hex == "f818" {
            // simple(24) in two bytes is not well-formed under RFC 8949 section 3.3.
            #expect(throws: AttestError(.cborNotWellFormed, "")) {
                try CBORDecoder.decode(bytes[...], limits: .general)
            }
            return
        }
        let value = try CBORDecoder.decode(bytes[...], limits: .general)
        if let diagnostic = vector.diagnostic {
            #expect(value.diagnosticNotation == diagnostic)
        } else {
            let expected = vector.decoded ?? .null  // a JSON null decodes as a missing Optional
            #expect(expected.matches(value), "decoded \(value.diagnosticNotation)")
        }
    }

    static let notWellFormed: [String] = {
        guard let data = try? Fixtures.data("cbor/cbor_not_well_formed.json"),
            let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let list = root["not_well_formed"] as? [[String: Any]]
        else { return [] }
        return list.compactMap { $0["hex"] as? String }
    }()

    @Test("the not-well-formed file holds 121 items")
    func notWellFormedCount() {
        #expect(Self.notWellFormed.count == 121)
    }

    @Test("rejects every not-well-formed item", arguments: notWellFormed)
    func rejectsNotWellFormed(_ hex: String) throws {
        let bytes = try #require(Hex.decode(hex))
        #expect(throws: AttestError.self) { try CBORDecoder.decode(bytes[...], limits: .general) }
        #expect(throws: AttestError.self) { try CBORDecoder.decode(bytes[...], limits: .appAttest) }
    }

    @Test(
        "refuses 2^64-1 declared lengths without allocating",
        arguments: ["9bffffffffffffffff", "bbffffffffffffffff", "5bffffffffffffffff", "7b7fffffffffffffff"])
    func hugeDeclaredLengths(_ hex: String) throws {
        let bytes = try #require(Hex.decode(hex))
        #expect(throws: AttestError(.cborNotWellFormed, "")) { try CBORDecoder.decode(bytes[...], limits: .general) }
    }

    @Test("stops 100,000-deep arrays and tag chains at the depth limit", arguments: [UInt8(0x81), 0xC6, 0xCA])
    func deepNesting(_ byte: UInt8) {
        let bytes = [UInt8](repeating: byte, count: 100_000) + [0x00]
        #expect(throws: AttestError(.cborTooDeep, "")) { try CBORDecoder.decode(bytes[...], limits: .appAttest) }
        #expect(throws: AttestError(.cborTooDeep, "")) { try CBORDecoder.decode(bytes[...], limits: .general) }
    }

    @Test("allows nesting up to the limit and not one deeper")
    func depthBoundary() throws {
        let atLimit = [UInt8](repeating: 0x81, count: 7) + [0x00]
        #expect(try CBORDecoder.decode(atLimit[...], limits: .appAttest) != .null)
        let overLimit = [UInt8](repeating: 0x81, count: 8) + [0x00]
        #expect(throws: AttestError(.cborTooDeep, "")) { try CBORDecoder.decode(overLimit[...], limits: .appAttest) }
    }

    @Test("refuses indefinite lengths in App Attest objects")
    func indefiniteAmplification() {
        let bytes = [0x9F] + [UInt8](repeating: 0x80, count: 10_000) + [0xFF]
        #expect(throws: AttestError(.cborIndefiniteLength, "")) { try CBORDecoder.decode(bytes[...], limits: .appAttest) }
        #expect(throws: AttestError(.cborTooLarge, "")) {
            try CBORDecoder.decode(bytes[...], limits: .init(maximumDepth: 8, allowsIndefiniteLength: true, maximumItems: 512))
        }
    }

    @Test("rejects a byte after the top-level item")
    func trailingByte() {
        #expect(throws: AttestError(.cborTrailingBytes, "")) { try CBORDecoder.decode([0x01, 0x00][...], limits: .appAttest) }
    }

    @Test("rejects duplicate map keys, never first- or last-wins")
    func duplicateKeys() throws {
        let bytes = try #require(Hex.decode("a2616101616102"))
        #expect(throws: AttestError(.cborDuplicateKey, "")) { try CBORDecoder.decode(bytes[...], limits: .appAttest) }
    }

    @Test("accepts non-shortest integers and any key order (Apple's encoder is canonical; leniency costs nothing)")
    func nonCanonicalAccepted() throws {
        #expect(try CBORDecoder.decode([0x18, 0x05][...], limits: .appAttest) == .unsigned(5))
        let unordered = try #require(Hex.decode("a2616202616101"))
        #expect(try CBORDecoder.decode(unordered[...], limits: .appAttest).mapEntries?.count == 2)
    }

    @Test("rejects text that is not UTF-8")
    func invalidUTF8() {
        #expect(throws: AttestError(.cborNotWellFormed, "")) { try CBORDecoder.decode([0x62, 0xC3, 0x28][...], limits: .appAttest) }
    }

    @Test(
        "round-trips what it decodes through the encoder",
        arguments: ["a26161016162820203", "83010203", "c249010000000000000000", "f93c00"])
    func roundTrip(_ hex: String) throws {
        let bytes = try #require(Hex.decode(hex))
        let value = try CBORDecoder.decode(bytes[...], limits: .general)
        #expect(try CBORDecoder.decode(value.encoded[...], limits: .general) == value)
    }
}
