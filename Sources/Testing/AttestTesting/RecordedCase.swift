import AttestCrypto
package import Foundation

/// One object recorded from a real device, as stored in `fixtures/appattest/recorded/`.
package struct RecordedCase: Decodable, Sendable {
    package let id: String
    package let kind: String
    package let objectB64: String?
    package let keyIDB64: String?
    package let clientDataHashB64: String?
    package let clientDataB64: String?
    package let teamID: String
    package let bundleID: String
    package let appID: String
    package let environment: String?
    package let verifyAtUnix: Int64?
    package let publicKeyPEM: String?
    package let credentialPublicKeyPEM: String?
    package let previousCounter: UInt32?
    package let expectedCounter: UInt32?
    package let pairedAttestationID: String?
    package let expectedResult: String
    package let leafCertDERB64: String?
    package let intermediateCertDERB64: String?
    package let authDataB64: String?
    /// How the recording's source computed clientDataHash, in words.
    package let clientDataHashDerivation: String?
    /// The client data (or challenge) as text, as bytes, or as the source stored it.
    package let clientDataUTF8: String?
    package let clientDataB64URLAsStored: String?
    package let challengeB64: String?
    package let challengeHex: String?
    package let challengeUTF8: String?
    /// The signCount inside an assertion object.
    package let counterInObject: UInt32?

    enum CodingKeys: String, CodingKey {
        case id, kind, environment
        case objectB64 = "object_b64"
        case keyIDB64 = "key_id_b64"
        case clientDataHashB64 = "client_data_hash_b64"
        case clientDataB64 = "client_data_b64"
        case teamID = "team_id"
        case bundleID = "bundle_id"
        case appID = "app_id"
        case verifyAtUnix = "verify_at_unix"
        case publicKeyPEM = "public_key_pem"
        case credentialPublicKeyPEM = "credential_public_key_pem"
        case previousCounter = "previous_counter"
        case expectedCounter = "expected_counter"
        case pairedAttestationID = "paired_attestation_id"
        case expectedResult = "expected_result"
        case leafCertDERB64 = "leaf_cert_der_b64"
        case intermediateCertDERB64 = "intermediate_cert_der_b64"
        case authDataB64 = "auth_data_b64"
        case clientDataHashDerivation = "client_data_hash_derivation"
        case clientDataUTF8 = "client_data_utf8"
        case clientDataB64URLAsStored = "client_data_b64url_as_stored"
        case challengeB64 = "challenge_b64"
        case challengeHex = "challenge_hex"
        case challengeUTF8 = "challenge_utf8"
        case counterInObject = "counter_in_object"
    }

    /// Decoded bytes of a standard-base64 field.
    package static func bytes(_ base64: String?) -> [UInt8]? {
        base64.flatMap { Data(base64Encoded: $0) }.map { Array($0) }
    }

    package var object: [UInt8]? { Self.bytes(objectB64) }
    package var keyID: [UInt8]? { Self.bytes(keyIDB64) }
    package var clientDataHash: [UInt8]? { Self.bytes(clientDataHashB64) }
    package var isPartial: Bool { id.hasSuffix("_partial") }
}

extension RecordedCase {
    /// Recorded bytes whose SHA-256 is the recorded clientDataHash, and the field they came from:
    /// the bytes a server must have issued as the challenge to accept the object. Nil when no
    /// recorded field hashes to it (no hash, a raw challenge used as the hash, an unknown challenge).
    package var hashedClientData: (field: String, bytes: [UInt8])? {
        clientDataCandidates.first { hashesToClientDataHash($0.bytes) }
    }

    /// True when SHA-256 of `bytes` is the recorded clientDataHash.
    package func hashesToClientDataHash(_ bytes: [UInt8]) -> Bool {
        guard let hash = clientDataHash else { return false }
        return Digest.sha256(bytes) == hash
    }

    /// `04 || X || Y` of `credential_public_key_pem` (the attested key), nil without one.
    package var credentialPublicKeyPoint: [UInt8]? {
        guard let pem = credentialPublicKeyPEM, let key = try? PublicKey(pem: pem) else { return nil }
        return key.uncompressedPoint
    }

    /// Every recorded rendering of the client data or challenge, decoded, in order of preference.
    private var clientDataCandidates: [(field: String, bytes: [UInt8])] {
        var candidates: [(field: String, bytes: [UInt8]?)] = [
            ("client_data_b64", Self.bytes(clientDataB64)),
            ("client_data_b64url_as_stored", clientDataB64URLAsStored.flatMap(Self.base64URLBytes)),
            ("client_data_utf8", clientDataUTF8.map { Array($0.utf8) }),
            ("challenge_b64", Self.bytes(challengeB64)),
            ("challenge_hex", challengeHex.flatMap(Hex.decode)),
            ("challenge_utf8", challengeUTF8.map { Array($0.utf8) }),
        ]
        // Some sources hash the 16 raw bytes of a UUID challenge rather than its text.
        if let text = challengeUTF8, let uuid = UUID(uuidString: text) {
            candidates.append(("challenge_utf8 as UUID bytes", withUnsafeBytes(of: uuid.uuid) { Array($0) }))
        }
        return candidates.compactMap { candidate in candidate.bytes.map { (candidate.field, $0) } }
    }

    private static func base64URLBytes(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return bytes(standard)
    }
}

/// Where the recorded data lives in this repository, found from this source file's path so that
/// tests and benchmarks work from any working directory (and never read outside the repository).
package enum Fixtures {
    /// `<repo>/fixtures`.
    package static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // AttestTesting
        .deletingLastPathComponent()  // Testing
        .deletingLastPathComponent()  // Sources
        .deletingLastPathComponent()  // the package
        .appendingPathComponent("fixtures")

    /// Every recorded case, sorted by id.
    package static func recordedCases() throws -> [RecordedCase] {
        let folder = directory.appendingPathComponent("appattest/recorded")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
        return try names.map { name in
            try JSONDecoder().decode(RecordedCase.self, from: Data(contentsOf: folder.appendingPathComponent(name)))
        }
    }

    /// The recorded case with this id.
    package static func recordedCase(_ id: String) throws -> RecordedCase {
        let url = directory.appendingPathComponent("appattest/recorded/\(id).json")
        return try JSONDecoder().decode(RecordedCase.self, from: Data(contentsOf: url))
    }

    /// A file under `fixtures/` as bytes.
    package static func data(_ relativePath: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent(relativePath))
    }
}
