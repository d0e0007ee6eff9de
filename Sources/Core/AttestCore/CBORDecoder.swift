/// A strict CBOR decoder for untrusted input.
///
/// - Never allocates by a declared length: a string's length, an array's or a map's count must fit
///   in the bytes that remain before anything is read.
/// - Bounded recursion: containers and tags count towards `Limits.maximumDepth`.
/// - Rejects everything RFC 8949 calls not well-formed, duplicate map keys, invalid UTF-8 and
///   (outside `decodePrefix`) any byte after the top-level item.
/// - Accepts non-shortest integer encodings and any key order: Apple's encoder is canonical, so
///   leniency there costs nothing, and the verifier never re-encodes what it checks.
package enum CBORDecoder {
    /// Resource limits for one decode.
    package struct Limits: Sendable {
        /// Nesting of arrays, maps and tags; the top-level item is depth 1.
        package var maximumDepth: Int
        /// Whether indefinite-length strings, arrays and maps are allowed.
        package var allowsIndefiniteLength: Bool
        /// Upper bound on the number of data items (every nested item counts).
        package var maximumItems: Int

        package init(maximumDepth: Int, allowsIndefiniteLength: Bool, maximumItems: Int) {
            (self.maximumDepth, self.allowsIndefiniteLength, self.maximumItems) = (maximumDepth, allowsIndefiniteLength, maximumItems)
        }

        /// For App Attest objects: depth 8, definite lengths only, at most 512 items.
        package static let appAttest = Limits(maximumDepth: 8, allowsIndefiniteLength: false, maximumItems: 512)
        /// For general CBOR (test vectors, diagnostics): depth 64, indefinite lengths allowed.
        package static let general = Limits(maximumDepth: 64, allowsIndefiniteLength: true, maximumItems: 1 << 20)
    }

    /// Decodes exactly one item that spans all of `bytes`.
    package static func decode(_ bytes: ArraySlice<UInt8>, limits: Limits) throws(AttestError) -> CBORValue {
        let (value, length) = try decodePrefix(bytes, limits: limits)
        guard length == bytes.count else {
            throw AttestError(.cborTrailingBytes, "\(bytes.count - length) bytes follow the top-level CBOR item")
        }
        return value
    }

    /// Decodes one item at the start of `bytes` and says how many bytes it took.
    package static func decodePrefix(
        _ bytes: ArraySlice<UInt8>, limits: Limits
    ) throws(AttestError) -> (value: CBORValue, length: Int) {
        var reader = Reader(bytes: bytes, limits: limits)
        let value = try reader.item(depth: 1)
        return (value, reader.position - bytes.startIndex)
    }
}

private struct Reader {
    let bytes: ArraySlice<UInt8>
    let limits: CBORDecoder.Limits
    var position: Int
    var items = 0

    init(bytes: ArraySlice<UInt8>, limits: CBORDecoder.Limits) {
        self.bytes = bytes
        self.limits = limits
        position = bytes.startIndex
    }

    var remaining: Int { bytes.endIndex - position }

    private static let breakByte: UInt8 = 0xFF

    mutating func byte() throws(AttestError) -> UInt8 {
        guard position < bytes.endIndex else { throw AttestError(.cborNotWellFormed, "input ends inside an item") }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func take(_ count: UInt64) throws(AttestError) -> ArraySlice<UInt8> {
        guard count <= UInt64(remaining) else {
            throw AttestError(.cborNotWellFormed, "declared length \(count) exceeds the \(remaining) bytes left")
        }
        let start = position
        position += Int(count)
        return bytes[start..<position]
    }

    mutating func uint(_ width: Int) throws(AttestError) -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<width { value = value << 8 | UInt64(try byte()) }
        return value
    }

    /// Reads the argument of a head; nil means indefinite length (additional information 31).
    mutating func argument(_ info: UInt8) throws(AttestError) -> UInt64? {
        switch info {
        case 0..<24: return UInt64(info)
        case 24: return try uint(1)
        case 25: return try uint(2)
        case 26: return try uint(4)
        case 27: return try uint(8)
        case 31: return nil
        default: throw AttestError(.cborNotWellFormed, "reserved additional information \(info)")
        }
    }

    mutating func item(depth: Int) throws(AttestError) -> CBORValue {
        guard depth <= limits.maximumDepth else {
            throw AttestError(.cborTooDeep, "nesting deeper than \(limits.maximumDepth)")
        }
        items += 1
        guard items <= limits.maximumItems else {
            throw AttestError(.cborTooLarge, "more than \(limits.maximumItems) data items")
        }
        let initial = try byte()
        let major = initial >> 5
        let info = initial & 0x1F
        if major == 7 { return try simpleOrFloat(info) }
        let argument = try argument(info)
        switch major {
        case 0:
            guard let argument else { throw AttestError(.cborNotWellFormed, "indefinite length on an integer") }
            return .unsigned(argument)
        case 1:
            guard let argument else { throw AttestError(.cborNotWellFormed, "indefinite length on an integer") }
            return .negative(argument)
        case 2:
            guard let argument else { return .byteChunks(try chunks(major: 2).map { Array($0) }) }
            return .bytes(Array(try take(argument)))
        case 3:
            guard let argument else { return .textChunks(try chunks(major: 3).map { chunk throws(AttestError) in try utf8(chunk) }) }
            return .text(try utf8(try take(argument)))
        case 4:
            return .array(try arrayItems(count: argument, depth: depth))
        case 5:
            return .map(try mapEntries(count: argument, depth: depth))
        default:  // 6: tag
            guard let argument else { throw AttestError(.cborNotWellFormed, "indefinite length on a tag") }
            return .tagged(argument, try item(depth: depth + 1))
        }
    }

    mutating func checkIndefiniteAllowed() throws(AttestError) {
        guard limits.allowsIndefiniteLength else {
            throw AttestError(.cborIndefiniteLength, "indefinite-length items are not allowed here")
        }
    }

    /// Chunks of an indefinite-length string: each must be a definite string of the same major type.
    mutating func chunks(major: UInt8) throws(AttestError) -> [ArraySlice<UInt8>] {
        try checkIndefiniteAllowed()
        var parts: [ArraySlice<UInt8>] = []
        while true {
            let initial = try byte()
            if initial == Reader.breakByte { return parts }
            guard initial >> 5 == major, initial & 0x1F != 31 else {
                throw AttestError(.cborNotWellFormed, "an indefinite-length string holds a chunk of another kind")
            }
            items += 1
            guard items <= limits.maximumItems else {
                throw AttestError(.cborTooLarge, "more than \(limits.maximumItems) data items")
            }
            guard let length = try argument(initial & 0x1F) else {
                throw AttestError(.cborNotWellFormed, "nested indefinite-length string")
            }
            parts.append(try take(length))
        }
    }

    func utf8(_ slice: ArraySlice<UInt8>) throws(AttestError) -> String {
        guard let text = String(validating: slice, as: UTF8.self) else {
            throw AttestError(.cborNotWellFormed, "text string is not valid UTF-8")
        }
        return text
    }

    mutating func atBreak() throws(AttestError) -> Bool {
        guard position < bytes.endIndex else {
            throw AttestError(.cborNotWellFormed, "input ends inside an indefinite-length item")
        }
        if bytes[position] == Reader.breakByte {
            position += 1
            return true
        }
        return false
    }

    mutating func arrayItems(count: UInt64?, depth: Int) throws(AttestError) -> [CBORValue] {
        var values: [CBORValue] = []
        if let count {
            // Each item takes at least one byte: refuse counts the input cannot hold before looping.
            guard count <= UInt64(remaining) else {
                throw AttestError(.cborNotWellFormed, "array declares \(count) items but \(remaining) bytes remain")
            }
            for _ in 0..<count { values.append(try item(depth: depth + 1)) }
        } else {
            try checkIndefiniteAllowed()
            while try !atBreak() { values.append(try item(depth: depth + 1)) }
        }
        return values
    }

    mutating func mapEntries(count: UInt64?, depth: Int) throws(AttestError) -> [CBORMapEntry] {
        var entries: [CBORMapEntry] = []
        var keys = Set<CBORValue>()
        func add(_ key: CBORValue, _ value: CBORValue) throws(AttestError) {
            guard keys.insert(key).inserted else {
                throw AttestError(.cborDuplicateKey, "a map repeats a key")
            }
            entries.append(CBORMapEntry(key: key, value: value))
        }
        if let count {
            guard count <= UInt64(remaining / 2) else {
                throw AttestError(.cborNotWellFormed, "map declares \(count) pairs but \(remaining) bytes remain")
            }
            for _ in 0..<count {
                let key = try item(depth: depth + 1)
                try add(key, try item(depth: depth + 1))
            }
        } else {
            try checkIndefiniteAllowed()
            while try !atBreak() {
                let key = try item(depth: depth + 1)
                if try atBreak() { throw AttestError(.cborNotWellFormed, "map has a key without a value") }
                try add(key, try item(depth: depth + 1))
            }
        }
        return entries
    }

    mutating func simpleOrFloat(_ info: UInt8) throws(AttestError) -> CBORValue {
        switch info {
        case 0..<20: return .simple(info)
        case 20: return .bool(false)
        case 21: return .bool(true)
        case 22: return .null
        case 23: return .undefined
        case 24:
            let value = try byte()
            // RFC 8949 section 3.3: simple values below 32 must use the one-byte form.
            guard value >= 32 else { throw AttestError(.cborNotWellFormed, "simple value \(value) in two-byte form") }
            return .simple(value)
        case 25: return .float(HalfFloat.double(fromBits: UInt16(try uint(2))))
        case 26: return .float(Double(Float(bitPattern: UInt32(try uint(4)))))
        case 27: return .float(Double(bitPattern: try uint(8)))
        case 31: throw AttestError(.cborNotWellFormed, "break outside an indefinite-length item")
        default: throw AttestError(.cborNotWellFormed, "reserved simple value encoding \(info)")
        }
    }
}

/// IEEE 754 binary16 to Double.
enum HalfFloat {
    static func double(fromBits bits: UInt16) -> Double {
        let sign: FloatingPointSign = bits & 0x8000 == 0 ? .plus : .minus
        let exponent = Int((bits >> 10) & 0x1F)
        let mantissa = Double(bits & 0x3FF)
        switch exponent {
        case 0: return Double(sign: sign, exponent: -24, significand: mantissa)
        case 31: return mantissa == 0 ? (sign == .plus ? .infinity : -.infinity) : .nan
        default: return Double(sign: sign, exponent: exponent - 25, significand: mantissa + 1024)
        }
    }
}
