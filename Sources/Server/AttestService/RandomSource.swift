import AttestCrypto

/// Randomness, injected so that tests can make identifiers predictable.
package protocol RandomSource: Sendable {
    /// `count` random bytes.
    func bytes(_ count: Int) throws -> [UInt8]
}

/// OpenSSL's CSPRNG, seeded by the operating system.
package struct SystemRandom: RandomSource {
    /// The system CSPRNG.
    package init() {}
    /// `count` bytes from OpenSSL's `RAND_bytes`.
    package func bytes(_ count: Int) throws -> [UInt8] { try SecureRandom.bytes(count) }
}

extension RandomSource {
    /// `count` bytes, or `internal_error` when the source fails.
    func bytesOrFail(_ count: Int) throws(ServiceError) -> [UInt8] {
        do {
            return try bytes(count)
        } catch {
            throw ServiceError.randomFailed
        }
    }
}
