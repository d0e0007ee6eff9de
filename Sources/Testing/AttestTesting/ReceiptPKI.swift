package import AttestCrypto

/// A synthetic receipt PKI shaped like Apple's: root, "Apple Application Integration CA 5 - G1",
/// and a receipt signer carrying the marker extension (or not), made at test time. Shared by the
/// receipt verifier's tests and the receipt refresher's.
package struct ReceiptPKI {
    package static let markerOID = "1.2.840.113635.100.12.15"
    package let rootKey: PrivateKey
    package let root: Certificate
    package let intermediateKey: PrivateKey
    package let intermediate: Certificate
    package let signerKey: PrivateKey
    package let signer: Certificate

    package init(time: Int64, marker: Bool = true) throws {
        (rootKey, intermediateKey, signerKey) = (
            try PrivateKey.generate(.p384), try PrivateKey.generate(.p256), try PrivateKey.generate(.p256)
        )
        root = try Self.issue(
            "Apple Root CA - G3", serial: 1, from: time - 86_400 * 365, to: time + 86_400 * 365, ca: "critical,CA:TRUE",
            usage: "critical,keyCertSign,cRLSign", key: rootKey, issuer: nil, issuerKey: rootKey)
        intermediate = try Self.issue(
            "Apple Application Integration CA 5 - G1", serial: 2, from: time - 86_400 * 30, to: time + 86_400 * 300,
            ca: "critical,CA:TRUE,pathlen:0", usage: "critical,keyCertSign,cRLSign", key: intermediateKey, issuer: root, issuerKey: rootKey)
        signer = try Self.issue(
            "Application Attestation Fraud Receipt Signing", serial: 3, from: time - 86_400 * 10, to: time + 86_400 * 200,
            ca: "critical,CA:FALSE", usage: "critical,digitalSignature", marker: marker, key: signerKey, issuer: intermediate,
            issuerKey: intermediateKey)
    }

    /// One certificate of the PKI: Apple's organisation, P-384 signatures, the marker extension when asked.
    private static func issue(
        _ commonName: String, serial: UInt64, from notBefore: Int64, to notAfter: Int64, ca: String, usage: String, marker: Bool = false,
        key: PrivateKey, issuer: Certificate?, issuerKey: PrivateKey
    ) throws -> Certificate {
        try CertificateBuilder.issue(
            CertificateTemplate(
                commonName: commonName, organization: "Apple Inc.", serial: serial, notBefore: notBefore, notAfter: notAfter,
                basicConstraints: ca, keyUsage: usage,
                extraExtensions: marker ? [.init(oid: markerOID, isCritical: false, value: [0x05, 0x00])] : [], digest: .sha384),
            subjectKey: try key.publicKey, issuer: issuer, issuerKey: issuerKey)
    }

    /// Another receipt signer under the same intermediate.
    package func anotherSigner() throws -> (Certificate, PrivateKey) {
        let key = try PrivateKey.generate(.p256)
        let certificate = try Self.issue(
            "Application Attestation Fraud Receipt Signing", serial: 4, from: signer.notBefore ?? 0, to: signer.notAfter ?? 0,
            ca: "critical,CA:FALSE", usage: "critical,digitalSignature", marker: true, key: key, issuer: intermediate,
            issuerKey: intermediateKey)
        return (certificate, key)
    }

    package func sign(
        _ content: [UInt8], form: CMSSignatureForm = .content, certificates: [Certificate]? = nil, contentType: String? = nil,
        detached: Bool = false, otherSigners: [(Certificate, PrivateKey)] = []
    ) throws -> [UInt8] {
        try CMSBuilder.sign(
            content: content, signer: signer, key: signerKey, certificates: certificates ?? [intermediate, root], form: form,
            contentType: contentType, detached: detached, otherSigners: otherSigners)
    }
}
