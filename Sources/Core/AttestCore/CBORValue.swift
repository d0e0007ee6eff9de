/// One decoded CBOR data item (RFC 8949).
///
/// Strings keep their chunks when they were sent with indefinite length, so that diagnostic
/// notation can be reproduced exactly; `bytesValue` and `textValue` join them.
package indirect enum CBORValue: Sendable, Hashable {
    case unsigned(UInt64)
    /// The value is `-1 - n`.
    case negative(UInt64)
    case bytes([UInt8])
    case byteChunks([[UInt8]])
    case text(String)
    case textChunks([String])
    case array([CBORValue])
    /// Entries in encoded order; keys are unique (the decoder rejects duplicates).
    case map([CBORMapEntry])
    case tagged(UInt64, CBORValue)
    case simple(UInt8)
    case bool(Bool)
    case null
    case undefined
    case float(Double)

    /// The bytes of a definite or chunked byte string.
    package var bytesValue: [UInt8]? {
        switch self {
        case .bytes(let bytes): bytes
        case .byteChunks(let chunks): chunks.flatMap { $0 }
        default: nil
        }
    }

    /// The text of a definite or chunked text string.
    package var textValue: String? {
        switch self {
        case .text(let text): text
        case .textChunks(let chunks): chunks.joined()
        default: nil
        }
    }

    /// The entries of a map.
    package var mapEntries: [CBORMapEntry]? {
        if case .map(let entries) = self { return entries }
        return nil
    }

    /// The items of an array.
    package var arrayItems: [CBORValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The value stored under `key` in a map.
    package subscript(key: CBORValue) -> CBORValue? {
        mapEntries?.first { $0.key == key }?.value
    }
}

/// One key/value pair of a CBOR map.
package struct CBORMapEntry: Sendable, Hashable {
    package var key: CBORValue
    package var value: CBORValue

    package init(key: CBORValue, value: CBORValue) { (self.key, self.value) = (key, value) }
}
