import AttestCore
import AttestCrypto
import AttestOptions
import Foundation

/// The JSON document `attestctl verify` prints, and the exit code that goes with it.
struct Report: Encodable {
    struct Extensions: Encodable {
        let bundleVersion: String?
        let validationCategory: UInt32?
        let validationCategoryName: String?
        let otherKeys: [String]

        enum CodingKeys: String, CodingKey {
            case bundleVersion = "bundle_version"
            case validationCategory = "validation_category"
            case validationCategoryName = "validation_category_name"
            case otherKeys = "other_keys"
        }

        init?(_ extensions: AuthenticatorExtensions?) {
            guard let extensions else { return nil }
            bundleVersion = extensions.bundleVersion
            validationCategory = extensions.validationCategory?.rawValue
            validationCategoryName = extensions.validationCategory?.name
            otherKeys = extensions.otherKeys
        }
    }

    let valid: Bool
    var kind: String?
    var environment: String?
    var keyID: String?
    var appID: String?
    var publicKey: String?
    var counter: UInt32?
    var receiptLength: Int?
    var certificateNotAfter: Int64?
    var extensions: Extensions?
    var code: String?
    var reason: String?

    enum CodingKeys: String, CodingKey {
        case valid, kind, environment, counter, extensions, code, reason
        case keyID = "key_id"
        case appID = "app_id"
        case publicKey = "public_key"
        case receiptLength = "receipt_length"
        case certificateNotAfter = "certificate_not_after"
    }

    init(_ attestation: VerifiedAttestation) {
        valid = true
        kind = "attestation"
        environment = attestation.environment.rawValue
        keyID = Data(attestation.keyID).base64EncodedString()
        appID = attestation.appID.description
        publicKey = Hex.encode(attestation.publicKey)
        counter = 0
        receiptLength = attestation.receipt.count
        certificateNotAfter = attestation.leafNotAfter
        extensions = Extensions(attestation.extensions)
    }

    init(_ assertion: VerifiedAssertion, key: PublicKey) {
        valid = true
        kind = "assertion"
        appID = assertion.appID.description
        publicKey = key.uncompressedPoint.map(Hex.encode)
        keyID = key.uncompressedPoint.map { Data(Digest.sha256($0)).base64EncodedString() }
        counter = assertion.counter
        extensions = Extensions(assertion.extensions)
    }

    init(_ error: AttestError) {
        valid = false
        code = error.code.identifier
        reason = error.reason
    }

    /// Prints the document on stdout; 0 when valid, 1 when rejected.
    func write(to io: ToolIO) -> Int32 {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let text = (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{\"valid\": false}"
        io.standardOutput(text + "\n")
        return valid ? ExitCode.success : ExitCode.failure
    }
}
