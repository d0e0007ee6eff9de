/// The CBOR attestation object from `DCAppAttestService.attestKey`, structurally validated.
package struct AttestationObject: Sendable {
    /// Real objects are 5 to 6 KB; anything over this is refused before decoding.
    package static let maximumSize = 16 * 1024

    package let format: String
    /// `attStmt.x5c`, DER certificates as sent.
    package let certificateChain: [[UInt8]]
    /// `attStmt.receipt`: Apple's CMS receipt, stored as-is and not verified here.
    package let receipt: [UInt8]
    package let authenticatorData: AuthenticatorData

    /// Decodes `{"fmt": text, "attStmt": {"x5c": [bytes...], "receipt": bytes}, "authData": bytes}`.
    ///
    /// The top level must hold exactly those three keys; `attStmt` may carry further keys (ignored),
    /// since Apple may extend it and nothing there is trusted without the checks that follow.
    package init(cbor bytes: [UInt8]) throws(AttestError) {
        let root = try CBORDecoder.object(bytes, named: "attestation object", maximumSize: AttestationObject.maximumSize)
        guard let entries = root.mapEntries else {
            throw AttestError(.attestationStructure, "attestation object is not a CBOR map")
        }
        let keys = Set(entries.compactMap(\.key.textValue))
        guard entries.count == 3, keys == ["fmt", "attStmt", "authData"] else {
            throw AttestError(.attestationStructure, "attestation object must hold exactly fmt, attStmt and authData")
        }
        guard case .text(let format)? = root[.text("fmt")] else {
            throw AttestError(.attestationStructure, "fmt is not a text string")
        }
        guard let statement = root[.text("attStmt")], statement.mapEntries != nil else {
            throw AttestError(.attestationStructure, "attStmt is not a map")
        }
        guard case .bytes(let authData)? = root[.text("authData")] else {
            throw AttestError(.attestationStructure, "authData is not a byte string")
        }
        guard case .array(let chain)? = statement[.text("x5c")] else {
            throw AttestError(.attestationStructure, "attStmt.x5c is missing or not an array")
        }
        guard case .bytes(let receipt)? = statement[.text("receipt")] else {
            throw AttestError(.attestationStructure, "attStmt.receipt is missing or not a byte string")
        }
        var certificates: [[UInt8]] = []
        for item in chain {
            guard case .bytes(let der) = item else {
                throw AttestError(.x5cShape, "an x5c entry is not a byte string")
            }
            certificates.append(der)
        }
        self.format = format
        certificateChain = certificates
        self.receipt = receipt
        authenticatorData = try AuthenticatorData.parseAttestation(authData)
    }
}

/// The CBOR assertion object from `DCAppAttestService.generateAssertion`.
package struct AssertionObject: Sendable {
    /// Real objects are about 140 bytes; iOS 27 extensions add a little.
    package static let maximumSize = 2 * 1024

    /// DER ECDSA signature.
    package let signature: [UInt8]
    package let authenticatorData: AuthenticatorData

    /// Decodes `{"signature": bytes, "authenticatorData": bytes}`, exactly those two keys.
    package init(cbor bytes: [UInt8]) throws(AttestError) {
        let root = try CBORDecoder.object(bytes, named: "assertion object", maximumSize: AssertionObject.maximumSize)
        guard let entries = root.mapEntries, entries.count == 2 else {
            throw AttestError(.assertionStructure, "assertion must be a map of signature and authenticatorData")
        }
        guard case .bytes(let signature)? = root[.text("signature")] else {
            throw AttestError(.assertionStructure, "signature is missing or not a byte string")
        }
        guard case .bytes(let authData)? = root[.text("authenticatorData")] else {
            throw AttestError(.assertionStructure, "authenticatorData is missing or not a byte string")
        }
        self.signature = signature
        authenticatorData = try AuthenticatorData.parseAssertion(authData)
    }
}

extension CBORDecoder {
    /// An App Attest object's CBOR: refused by size before a byte is decoded, then decoded with
    /// the App Attest limits.
    static func object(_ bytes: [UInt8], named name: String, maximumSize: Int) throws(AttestError) -> CBORValue {
        guard bytes.count <= maximumSize else {
            throw AttestError(.cborTooLarge, "\(name) is \(bytes.count) bytes; the limit is \(maximumSize)")
        }
        return try CBORDecoder.decode(bytes[...], limits: .appAttest)
    }
}
