import AttestCore
import AttestCrypto
import AttestOptions
import Foundation

/// The JSON document `attestctl verify` prints (keys sorted, absent values left out), and the
/// exit code that goes with it.
struct Report {
    let valid: Bool
    /// The members other than `valid`; nil values are left out.
    private var members: [(String, (any Sendable)?)]

    init(_ attestation: VerifiedAttestation) {
        valid = true
        members = [
            ("kind", "attestation"), ("environment", attestation.environment.rawValue),
            ("key_id", Data(attestation.keyID).base64EncodedString()), ("app_id", attestation.appID.description),
            ("public_key", Hex.encode(attestation.publicKey)), ("counter", UInt32(0)), ("receipt_length", attestation.receipt.count),
            ("certificate_not_after", attestation.leafNotAfter), ("extensions", Self.extensions(attestation.extensions)),
        ]
    }

    init(_ assertion: VerifiedAssertion, key: PublicKey) {
        valid = true
        members = [
            ("kind", "assertion"), ("app_id", assertion.appID.description), ("public_key", key.uncompressedPoint.map(Hex.encode)),
            ("key_id", key.uncompressedPoint.map { Data(Digest.sha256($0)).base64EncodedString() }), ("counter", assertion.counter),
            ("extensions", Self.extensions(assertion.extensions)),
        ]
    }

    init(_ receipt: VerifiedReceipt) {
        valid = true
        // risk_metric and not_before are always present, null when the receipt has no such field.
        members = [
            ("type", receipt.type.rawValue), ("app_id", receipt.appID.description), ("environment", receipt.environment.rawValue),
            ("created_at", receipt.createdAt), ("not_before", JSONValue(receipt.notBefore)), ("expires_at", receipt.expiresAt),
            ("risk_metric", JSONValue(receipt.riskMetric)), ("certificate_sha256", Hex.encode(receipt.certificateSHA256)),
        ]
    }

    init(_ error: AttestError) {
        valid = false
        members = [("code", error.code.identifier), ("reason", error.reason)]
    }

    private static func extensions(_ extensions: AuthenticatorExtensions?) -> JSONValue? {
        guard let extensions else { return nil }
        let members: [(String, (any Sendable)?)] = [
            ("bundle_version", extensions.bundleVersion), ("validation_category", extensions.validationCategory?.rawValue),
            ("validation_category_name", extensions.validationCategory?.name), ("other_keys", extensions.otherKeys),
        ]
        return sortedObject(members)
    }

    private static func sortedObject(_ members: [(String, (any Sendable)?)]) -> JSONValue {
        .object(members.compactMap { key, value in value.map { (key, $0) } }.sorted { $0.0 < $1.0 })
    }

    /// The document.
    var json: JSONValue { Self.sortedObject(members + [("valid", valid)]) }

    /// Prints the document on stdout; 0 when valid, 1 when rejected.
    func write(to io: ToolIO) -> Int32 {
        io.standardOutput(JSONText.render(json, pretty: true) + "\n")
        return valid ? ExitCode.success : ExitCode.failure
    }
}
