internal import COpenSSL

/// The elliptic curves attestd meets: P-256 device keys, P-384 Apple CA keys.
package enum ECCurve: String, Sendable, Hashable {
    case p256 = "prime256v1"
    case p384 = "secp384r1"

    /// The fixed SubjectPublicKeyInfo prefix that precedes an uncompressed point of this curve.
    var spkiPrefix: [UInt8] {
        switch self {
        case .p256:
            [
                0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A,
                0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
            ]
        case .p384:
            [
                0x30, 0x76, 0x30, 0x10, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x05, 0x2B,
                0x81, 0x04, 0x00, 0x22, 0x03, 0x62, 0x00,
            ]
        }
    }

    /// Length of `04 || X || Y`.
    package var uncompressedPointLength: Int {
        switch self {
        case .p256: 65
        case .p384: 97
        }
    }
}

/// A public key owned by this object (an `EVP_PKEY`), freed on deinit.
///
/// `@unchecked Sendable`: the key is never mutated after init, and OpenSSL 3 documents `EVP_PKEY`
/// as safe for concurrent read-only use (each verification makes its own `EVP_MD_CTX`).
package final class PublicKey: @unchecked Sendable {
    let pkey: OpaquePointer

    /// Takes ownership of one reference to `pkey`.
    init(owning pkey: OpaquePointer) {
        self.pkey = pkey
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Parses a DER SubjectPublicKeyInfo.
    package convenience init(spkiDER: [UInt8]) throws(CryptoError) {
        let parsed: OpaquePointer? = spkiDER.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw OpenSSLErrorQueue.error(.invalidPublicKey, "d2i_PUBKEY") }
        self.init(owning: parsed)
        guard spkiDERBytes() == spkiDER else {
            throw CryptoError(.invalidPublicKey, "SubjectPublicKeyInfo has trailing or non-canonical bytes")
        }
    }

    /// Parses a PEM `PUBLIC KEY` block.
    package convenience init(pem: String) throws(CryptoError) {
        let bio = try MemoryBIO(Array(pem.utf8))
        guard let parsed = PEM_read_bio_PUBKEY(bio.handle, nil, nil, nil) else {
            throw OpenSSLErrorQueue.error(.invalidPublicKey, "PEM_read_bio_PUBKEY")
        }
        self.init(owning: parsed)
    }

    /// Builds a key from an uncompressed point `04 || X || Y`; the point must lie on `curve`.
    package convenience init(uncompressedPoint point: [UInt8], curve: ECCurve) throws(CryptoError) {
        guard point.count == curve.uncompressedPointLength, point.first == 0x04 else {
            throw CryptoError(.invalidPublicKey, "expected a \(curve.uncompressedPointLength)-byte uncompressed point")
        }
        try self.init(spkiDER: curve.spkiPrefix + point)
    }

    /// The curve, or nil for a key that is not on a curve attestd knows (RSA, P-521, ...).
    package var curve: ECCurve? {
        guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC else { return nil }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(pkey, "group", &name, name.count, &length) == 1 else {
            _ = OpenSSLErrorQueue.drain()
            return nil
        }
        return ECCurve(rawValue: String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// The DER SubjectPublicKeyInfo.
    package var spkiDER: [UInt8] { spkiDERBytes() }

    private func spkiDERBytes() -> [UInt8] {
        let length = i2d_PUBKEY(pkey, nil)
        guard length > 0 else { return [] }
        var output = [UInt8](repeating: 0, count: Int(length))
        output.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_PUBKEY(pkey, &cursor)
        }
        return output
    }

    /// `04 || X || Y` for an EC key on a known curve, nil otherwise.
    package var uncompressedPoint: [UInt8]? {
        guard let curve else { return nil }
        // The provider parameter is far cheaper than i2d_PUBKEY, which builds an encoder context.
        var point = [UInt8](repeating: 0, count: curve.uncompressedPointLength)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(pkey, "encoded-pub-key", &point, point.count, &length) == 1 else {
            _ = OpenSSLErrorQueue.drain()
            return nil
        }
        guard length == curve.uncompressedPointLength, point.first == 0x04 else { return nil }
        return point
    }

    /// PEM text of the SubjectPublicKeyInfo.
    package var pem: String { Base64Text.pem(label: "PUBLIC KEY", der: spkiDERBytes()) }

    /// Verifies a DER-encoded ECDSA signature over `message`, hashed with `digest`.
    ///
    /// OpenSSL hashes the message itself: for an App Attest assertion the message is the 32-byte
    /// nonce, so the ECDSA primitive sees SHA-256(nonce), which is what Apple devices sign.
    /// Non-DER signature encodings are rejected by OpenSSL (it re-encodes and compares).
    package func verifySignature(_ signature: [UInt8], over message: [UInt8], digest: DigestAlgorithm) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest.evp, nil, pkey) == 1 else {
            _ = OpenSSLErrorQueue.drain()
            return false
        }
        let result = signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { msg in
                EVP_DigestVerify(context, sig.baseAddress, sig.count, msg.baseAddress, msg.count)
            }
        }
        if result != 1 { _ = OpenSSLErrorQueue.drain() }
        return result == 1
    }
}

/// An owned OpenSSL memory BIO over a copy of some bytes.
final class MemoryBIO {
    let handle: OpaquePointer
    private let storage: UnsafeMutableBufferPointer<UInt8>

    init(_ bytes: [UInt8]) throws(CryptoError) {
        storage = .allocate(capacity: max(bytes.count, 1))
        _ = storage.initialize(from: bytes)
        guard let bio = BIO_new_mem_buf(storage.baseAddress, Int32(bytes.count)) else {
            storage.deallocate()
            throw OpenSSLErrorQueue.error(.internalFailure, "BIO_new_mem_buf")
        }
        handle = bio
    }

    deinit {
        BIO_free(handle)
        storage.deallocate()
    }
}
