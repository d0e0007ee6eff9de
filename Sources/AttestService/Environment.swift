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

/// The encodings the HTTP protocol uses.
package enum Encoding {
    /// Strict RFC 4648 standard base64 (padded, no whitespace): nil for anything else.
    package static func base64(_ text: String) -> [UInt8]? {
        guard let data = Data(base64Encoded: text), data.base64EncodedString() == text else { return nil }
        return Array(data)
    }

    /// RFC 4648 base64url without padding.
    package static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Strict base64url without padding: nil for anything else (padding, standard alphabet, whitespace).
    package static func base64URL(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ isBase64URLCharacter($0) }) else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let remainder = standard.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { standard += String(repeating: "=", count: 4 - remainder) }
        guard let bytes = base64(standard), base64URL(bytes) == text else { return nil }
        return bytes
    }

    private static func isBase64URLCharacter(_ c: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(c) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
    }
}
