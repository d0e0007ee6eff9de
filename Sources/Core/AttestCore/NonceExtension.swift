import AttestCrypto

/// The App Attest nonce certificate extension, OID 1.2.840.113635.100.8.2:
/// `SEQUENCE { [1] EXPLICIT { OCTET STRING (32 bytes) } }`, parsed as strict DER.
enum NonceExtension {
    static let oid = "1.2.840.113635.100.8.2"

    /// The 32-byte nonce inside the extension value; anything but the exact shape is rejected.
    static func nonce(fromExtensionValue value: [UInt8]) throws(AttestError) -> [UInt8] {
        let sequence = try DERReader.single(value[...], tag: 0x30)
        let explicit = try DERReader.single(sequence, tag: 0xA1)
        let octets = try DERReader.single(explicit, tag: 0x04)
        guard octets.count == 32 else {
            throw AttestError(.nonceExtension, "nonce is \(octets.count) bytes, not 32")
        }
        return Array(octets)
    }
}

/// Reads DER tag-length-value triples (single-byte tags, minimal definite lengths up to 65,535).
/// Failures carry `code`: the nonce extension's by default, the receipt payload's for receipts.
enum DERReader {
    /// The contents of the one TLV that makes up all of `bytes`, which must carry `tag`.
    static func single(
        _ bytes: ArraySlice<UInt8>, tag: UInt8, code: AttestError.Code = .nonceExtension
    ) throws(AttestError) -> ArraySlice<UInt8> {
        let (contents, rest) = try element(bytes, tag: tag, code: code)
        guard rest.isEmpty else {
            throw AttestError(code, "\(rest.count) bytes follow the DER element")
        }
        return contents
    }

    /// The contents of the TLV at the start of `bytes`, which must carry `tag`, and the bytes after it.
    static func element(
        _ bytes: ArraySlice<UInt8>, tag: UInt8, code: AttestError.Code = .nonceExtension
    ) throws(AttestError) -> (contents: ArraySlice<UInt8>, rest: ArraySlice<UInt8>) {
        guard let first = bytes.first, first == tag else {
            throw AttestError(code, "expected DER tag 0x\(Hex.encode([tag]))")
        }
        var index = bytes.startIndex + 1
        guard index < bytes.endIndex else { throw AttestError(code, "DER length missing") }
        let lengthByte = bytes[index]
        index += 1
        var length = 0
        if lengthByte < 0x80 {
            length = Int(lengthByte)
        } else {
            let count = Int(lengthByte & 0x7F)
            guard (1...2).contains(count), bytes.endIndex - index >= count else {
                throw AttestError(code, "unsupported DER length form")
            }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
            // DER: the long form only for lengths of 128 and more, in the fewest bytes.
            guard length >= 0x80, bytes[bytes.startIndex + 2] != 0 else {
                throw AttestError(code, "non-minimal DER length")
            }
        }
        guard bytes.endIndex - index >= length else {
            throw AttestError(code, "DER length exceeds the bytes present (\(length) declared)")
        }
        return (bytes[index..<index + length], bytes[(index + length)...])
    }

    /// A DER INTEGER's contents as a non-negative `Int`: minimal two's complement, at most 4 bytes.
    static func nonNegativeInteger(_ contents: ArraySlice<UInt8>, code: AttestError.Code) throws(AttestError) -> Int {
        guard let first = contents.first, contents.count <= 4 else {
            throw AttestError(code, "INTEGER is empty or longer than 4 bytes")
        }
        guard first < 0x80 else { throw AttestError(code, "INTEGER is negative") }
        guard contents.count == 1 || first != 0 || contents[contents.startIndex + 1] >= 0x80 else {
            throw AttestError(code, "INTEGER is not minimally encoded")
        }
        return contents.reduce(0) { $0 << 8 | Int($1) }
    }
}
