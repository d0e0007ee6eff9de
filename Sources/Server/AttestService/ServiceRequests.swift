import AttestCrypto
package import AttestStorage

/// A public client ID as attestd issues it: `clid_` and 32 lower-case hex digits (16 random
/// bytes). Parsed at the edge, so only a string of exactly this shape reaches the store, the
/// rate limiter, the integration hints or a metrics label.
///
/// Why so strict: libpq sends text parameters as C strings, so `clid_<real>\u{0}anything` would
/// select the real integration while every in-memory key (limiter buckets, hints, labels) saw a
/// new string: unbounded memory, a bypassed rate limit and forged metrics lines (decision 0020).
package struct ClientID: Sendable, Hashable, CustomStringConvertible {
    /// The ID as issued and stored.
    package let text: String

    /// The fixed prefix.
    package static let prefix = "clid_"
    /// Hex digits after the prefix.
    package static let hexDigits = 32

    /// The client ID `text`; nil unless it is `clid_` and 32 lower-case hex digits.
    package init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == Self.prefix.utf8.count + Self.hexDigits, bytes.starts(with: Self.prefix.utf8),
            bytes.dropFirst(Self.prefix.utf8.count).allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return nil }
        self.text = text
    }

    package var description: String { text }
}

/// An App Attest key ID: the SHA-256 of the key's public point, 32 bytes.
package struct KeyID: Sendable, Hashable {
    /// The 32 bytes.
    package let bytes: [UInt8]

    /// A key ID from its bytes; nil unless there are exactly 32.
    package init?(_ bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }
}

/// A challenge as a device presents it: the 32 random bytes attestd issued, or in
/// `--insecure-test-mode` 1 to 256 seeded bytes (recorded devices used fixed client data).
package struct Challenge: Sendable, Hashable {
    /// The bytes the device hashed into its client data.
    package let bytes: [UInt8]

    /// The length of an issued challenge.
    package static let issuedLength = 32
    /// The lengths a seeded (test-mode) challenge may have.
    package static let seededLengths = 1...256

    /// A challenge of `bytes`; nil unless 32 bytes long, or a seeded length when `seeded`.
    package init?(_ bytes: [UInt8], seeded: Bool = false) {
        guard bytes.count == Self.issuedLength || (seeded && Self.seededLengths.contains(bytes.count)) else { return nil }
        self.bytes = bytes
    }

    /// The key it is stored under: SHA-256 of its bytes, so a copy of the database reveals no
    /// outstanding challenge and a seeded challenge of any length fits the 32-byte key.
    var storedID: [UInt8] { Digest.sha256(bytes) }
}

/// What a device request proves: an attestation (`/v1/attest`) or an assertion (`/v1/token`).
/// A phantom type, so that the one request type cannot carry one where the other is expected.
package enum AttestationProof {}
package enum AssertionProof {}

/// A decoded device request: the integration, the key, the CBOR object and the challenge.
package struct DeviceRequest<Proof>: Sendable {
    package var clientID: ClientID
    package var keyID: KeyID
    /// The CBOR attestation object (`AttestRequest`) or assertion (`RefreshRequest`).
    package var object: [UInt8]
    package var challenge: Challenge

    /// A decoded request.
    package init(clientID: ClientID, keyID: KeyID, object: [UInt8], challenge: Challenge) {
        (self.clientID, self.keyID, self.object, self.challenge) = (clientID, keyID, object, challenge)
    }
}

/// `POST /v1/attest`, decoded.
package typealias AttestRequest = DeviceRequest<AttestationProof>
/// `POST /v1/token`, decoded.
package typealias RefreshRequest = DeviceRequest<AssertionProof>

/// A challenge as handed to a device.
package struct IssuedChallenge: Sendable, Equatable {
    /// base64url (no padding) of 32 random bytes.
    package let challenge: String
    /// Seconds until it expires.
    package let expiresIn: Int64
}

/// An access token as handed to a device: shown once, stored only as a hash.
package struct IssuedToken: Sendable, Equatable {
    package let accessToken: String
    package let expiresIn: Int64
    package let scope: String
    package let workspaceID: String
    /// Minted for a debug token (`POST /v1/debug-token`), not an attested device.
    package var debug = false
}

/// What introspection and forward-auth learn about a valid token.
package struct ActiveToken: Sendable, Equatable {
    package let clientID: String
    package let workspaceID: String
    package let scope: String
    package let issuedAt: Int64
    package let expiresAt: Int64
    /// Minted for a debug token, not an attested device: `/v1/authorize` says `Attest-Debug: true`.
    package var debug = false
}

extension IntegrationRecord {
    /// The stored client ID as the typed value; nil only for a row attestd did not write (every
    /// ID it issues has the shape).
    package var issuedClientID: ClientID? { ClientID(clientID) }
}

/// What a revocation through `/v1/revoke` did, for its log line (never for its answer).
package struct TokenRevocation: Sendable, Equatable {
    /// The first 16 hex digits of the token's SHA-256: enough to match `attestctl token revoke
    /// --sha256` and a gateway's logs, not the token.
    package let hashPrefix: String
    /// The token's client ID when it was live before the revocation; nil otherwise.
    package let clientID: String?
    /// Whether a token was deleted.
    package let deleted: Bool
}
