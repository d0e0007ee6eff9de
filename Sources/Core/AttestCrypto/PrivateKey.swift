internal import COpenSSL

/// An EC private key: the synthetic device's and test PKI's, and an integration's DeviceCheck key,
/// which signs the JWTs attestd presents to Apple's attestationData endpoint (the only production signing).
///
/// `@unchecked Sendable`: immutable after creation; signing makes its own `EVP_MD_CTX`.
package final class PrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer

    init(owning pkey: OpaquePointer) {
        self.pkey = pkey
    }

    deinit { EVP_PKEY_free(pkey) }

    /// A fresh key on `curve` from the OS-seeded CSPRNG.
    package static func generate(_ curve: ECCurve) throws(CryptoError) -> PrivateKey {
        try generate(algorithm: "EC") { EVP_PKEY_CTX_set_group_name($0, curve.rawValue) }
    }

    /// A fresh RSA key, only so that tests can present a leaf with the wrong key type.
    package static func generateRSA(bits: Int32) throws(CryptoError) -> PrivateKey {
        try generate(algorithm: "RSA") { EVP_PKEY_CTX_set_rsa_keygen_bits($0, bits) }
    }

    // EVP_EC_gen and EVP_RSA_gen are variadic macros that Swift cannot import, so this spells out
    // the keygen sequence they expand to.
    private static func generate(
        algorithm: String, configure: (OpaquePointer) -> Int32
    ) throws(CryptoError) -> PrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil) else {
            throw OpenSSLErrorQueue.error(.internalFailure, "EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, configure(context) == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else { throw OpenSSLErrorQueue.error(.invalidPrivateKey, "\(algorithm) key generation") }
        return PrivateKey(owning: key)
    }

    /// Parses a PEM private key (PKCS#8 or traditional EC).
    package convenience init(pem: String) throws(CryptoError) {
        let bio = try MemoryBIO(Array(pem.utf8))
        guard let key = PEM_read_bio_PrivateKey(bio.handle, nil, nil, nil) else {
            throw OpenSSLErrorQueue.error(.invalidPrivateKey, "PEM_read_bio_PrivateKey")
        }
        self.init(owning: key)
    }

    /// The key's curve, or nil when it is not one of `ECCurve`'s (or not an EC key).
    package var curve: ECCurve? {
        (try? publicKey)?.curve
    }

    /// A JWS ES256 signature (RFC 7518 §3.4): ECDSA P-256 over SHA-256 of `message`, as raw
    /// `r || s` (64 bytes), not OpenSSL's DER. Refused for a key not on P-256.
    package func signES256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard curve == .p256 else { throw CryptoError(.unsupportedCurve, "ES256 needs a P-256 key") }
        return try ECDSASignature.raw(fromDER: sign(message, digest: .sha256), width: 32)
    }

    /// PKCS#8 PEM of this key (unencrypted: for test state directories only).
    package var pem: String {
        get throws(CryptoError) {
            guard let bio = BIO_new(BIO_s_mem()) else { throw OpenSSLErrorQueue.error(.internalFailure, "BIO_new") }
            defer { BIO_free(bio) }
            guard PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else {
                throw OpenSSLErrorQueue.error(.internalFailure, "PEM_write_bio_PrivateKey")
            }
            return BIOText.read(bio)
        }
    }

    /// The matching public key.
    package var publicKey: PublicKey {
        get throws(CryptoError) {
            let length = i2d_PUBKEY(pkey, nil)
            guard length > 0 else { throw OpenSSLErrorQueue.error(.internalFailure, "i2d_PUBKEY") }
            var der = [UInt8](repeating: 0, count: Int(length))
            der.withUnsafeMutableBufferPointer { buffer in
                var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
                _ = i2d_PUBKEY(pkey, &cursor)
            }
            return try PublicKey(spkiDER: der)
        }
    }

    /// A DER ECDSA signature over `message` hashed with `digest`.
    package func sign(_ message: [UInt8], digest: DigestAlgorithm) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw OpenSSLErrorQueue.error(.internalFailure, "EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, digest.evp, nil, pkey) == 1 else {
            throw OpenSSLErrorQueue.error(.internalFailure, "EVP_DigestSignInit")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw OpenSSLErrorQueue.error(.internalFailure, "EVP_DigestSign (size)")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw OpenSSLErrorQueue.error(.internalFailure, "EVP_DigestSign")
        }
        return Array(signature.prefix(length))
    }
}

/// Reads everything written to a memory BIO as text.
enum BIOText {
    static func read(_ bio: OpaquePointer) -> String {
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard length > 0, let pointer else { return "" }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}
