internal import COpenSSL

/// The message digests the verifier uses.
package enum DigestAlgorithm: Sendable, Hashable {
    case sha256
    case sha384

    var evp: OpaquePointer? {
        switch self {
        case .sha256: EVP_sha256()
        case .sha384: EVP_sha384()
        }
    }

    /// Output length in bytes.
    package var outputLength: Int {
        switch self {
        case .sha256: 32
        case .sha384: 48
        }
    }
}

/// One-shot hashing over contiguous bytes.
package enum Digest {
    /// SHA-256 of `bytes`.
    package static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        hash(bytes, .sha256)
    }

    /// The digest of `bytes` under `algorithm`.
    package static func hash(_ bytes: some Collection<UInt8>, _ algorithm: DigestAlgorithm) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: algorithm.outputLength)
        let contiguous = Array(bytes)
        let ok = contiguous.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                // EVP_Digest cannot fail for these built-in digests short of memory exhaustion.
                EVP_Digest(input.baseAddress, input.count, out.baseAddress, nil, algorithm.evp, nil)
            }
        }
        precondition(ok == 1, "EVP_Digest failed for a built-in digest")
        return output
    }
}

/// Comparison that takes the same time whatever the position of the first difference.
package enum ConstantTime {
    /// True when `a` and `b` have equal length and equal bytes; runtime depends on the length only.
    package static func equals(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        let left = Array(a)
        let right = Array(b)
        guard left.count == right.count else { return false }
        if left.isEmpty { return true }
        return left.withUnsafeBytes { l in
            right.withUnsafeBytes { r in CRYPTO_memcmp(l.baseAddress, r.baseAddress, l.count) == 0 }
        }
    }
}

/// Bytes from OpenSSL's CSPRNG, which is seeded from the operating system.
package enum SecureRandom {
    /// `count` random bytes; throws rather than ever returning predictable output.
    package static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        let ok = output.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
        guard ok == 1 else { throw OpenSSLErrorQueue.error(.randomFailure, "RAND_bytes") }
        return output
    }
}
