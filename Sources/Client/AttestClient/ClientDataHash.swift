import Foundation

#if canImport(CryptoKit)
    import CryptoKit
#elseif os(Linux)
    import AttestCrypto
#else
    #error("AttestClient needs SHA-256: CryptoKit on Apple platforms, AttestCrypto (OpenSSL) on Linux")
#endif

/// The client data of one App Attest call: the raw bytes of a challenge attestd issued. attestd
/// checks attestations and assertions against SHA-256 of exactly these bytes (docs/API.md), so
/// that hash is what the device signs over.
struct ClientData: Sendable {
    /// The challenge as attestd sent it (base64url, no padding), sent back with the answer.
    let challenge: String
    /// Its raw bytes.
    let bytes: Data

    /// The bytes of a challenge attestd issues (docs/API.md: 43 characters of base64url).
    static let challengeLength = 32

    /// The challenge's text and bytes; nil when `challenge` is not unpadded base64url of exactly
    /// `challengeLength` bytes: the device signs nothing else, so an answer that is not attestd's
    /// cannot have it sign chosen bytes.
    init?(challenge: String) {
        guard challenge.utf8.count == 43, challenge.utf8.allSatisfy(Self.isBase64URLDigit) else { return nil }
        var standard = challenge.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        guard let bytes = Data(base64Encoded: standard), bytes.count == Self.challengeLength else { return nil }
        self.challenge = challenge
        self.bytes = bytes
    }

    /// SHA-256 of the challenge's bytes: the `clientDataHash` for `attestKey` and `generateAssertion`.
    var hash: Data {
        #if canImport(CryptoKit)
            Data(SHA256.hash(data: bytes))
        #else
            Data(Digest.sha256(bytes))
        #endif
    }

    private static func isBase64URLDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }
}
