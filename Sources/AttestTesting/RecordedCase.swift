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

/// Where the recorded data lives in this repository, found from this source file's path so that
/// tests and benchmarks work from any working directory (and never read outside the repository).
package enum Fixtures {
    /// `<repo>/fixtures`.
    package static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
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
