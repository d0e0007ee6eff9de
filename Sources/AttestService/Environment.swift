import AttestCrypto
import Foundation

/// The current time, injected so that tests control expiry to the second.
package protocol Clock: Sendable {
    /// Unix seconds.
    func now() -> Int64
}

/// The system clock.
package struct SystemClock: Clock {
    package init() {}
    package func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
}

/// Randomness, injected so that tests can make identifiers predictable.
package protocol RandomSource: Sendable {
    /// `count` random bytes.
    func bytes(_ count: Int) throws -> [UInt8]
}

/// OpenSSL's CSPRNG, seeded by the operating system.
package struct SystemRandom: RandomSource {
    package init() {}
    package func bytes(_ count: Int) throws -> [UInt8] { try SecureRandom.bytes(count) }
}

/// The encodings the HTTP protocol uses (strict RFC 4648, see `Base64Text`).
package enum Encoding {
    /// Strict standard base64 (padded, no whitespace): nil for anything else.
    package static func base64(_ text: String) -> [UInt8]? { Base64Text.decode(text, .standard) }

    /// base64url without padding.
    package static func base64URL(_ bytes: [UInt8]) -> String { Base64Text.encode(bytes, .url) }

    /// Strict base64url without padding: nil for anything else (padding, standard alphabet, whitespace).
    package static func base64URL(_ text: String) -> [UInt8]? { Base64Text.decode(text, .url) }
}
