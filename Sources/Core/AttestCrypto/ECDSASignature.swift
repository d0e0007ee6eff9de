internal import COpenSSL

/// The two encodings of an ECDSA signature: DER (`SEQUENCE { r INTEGER, s INTEGER }`, what OpenSSL
/// makes and verifies) and raw `r || s` of fixed width (IEEE P1363, what JWS ES256 carries).
package enum ECDSASignature {
    /// `r || s`, each left-padded to `width` bytes (32 for P-256), from a DER signature.
    package static func raw(fromDER der: [UInt8], width: Int) throws(CryptoError) -> [UInt8] {
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else { throw OpenSSLErrorQueue.error(.invalidSignature, "d2i_ECDSA_SIG") }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: width * 2)
        let ok = raw.withUnsafeMutableBufferPointer { buffer in
            BN_bn2binpad(ECDSA_SIG_get0_r(signature), buffer.baseAddress, Int32(width)) == Int32(width)
                && BN_bn2binpad(ECDSA_SIG_get0_s(signature), buffer.baseAddress.map { $0 + width }, Int32(width)) == Int32(width)
        }
        guard ok else { throw OpenSSLErrorQueue.error(.invalidSignature, "BN_bn2binpad (r or s wider than the curve)") }
        return raw
    }

    /// The DER signature for raw `r || s` (even length).
    package static func der(fromRaw raw: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard !raw.isEmpty, raw.count % 2 == 0 else { throw CryptoError(.invalidSignature, "a raw signature is r || s of equal widths") }
        let width = raw.count / 2
        guard let signature = ECDSA_SIG_new() else { throw OpenSSLErrorQueue.error(.internalFailure, "ECDSA_SIG_new") }
        defer { ECDSA_SIG_free(signature) }
        guard let r = BN_bin2bn(raw, Int32(width), nil) else { throw OpenSSLErrorQueue.error(.internalFailure, "BN_bin2bn") }
        guard let s = Array(raw.suffix(width)).withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32(width), nil) }) else {
            BN_free(r)
            throw OpenSSLErrorQueue.error(.internalFailure, "BN_bin2bn")
        }
        // ECDSA_SIG_set0 takes ownership of r and s on success only.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            throw OpenSSLErrorQueue.error(.internalFailure, "ECDSA_SIG_set0")
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { throw OpenSSLErrorQueue.error(.internalFailure, "i2d_ECDSA_SIG") }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_ECDSA_SIG(signature, &cursor)
        }
        return der
    }
}
