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
        rootKey = try PrivateKey.generate(.p384)
        root = try CertificateBuilder.issue(
            CertificateTemplate(
                commonName: "Apple Root CA - G3", organization: "Apple Inc.", notBefore: time - 86_400 * 365,
                notAfter: time + 86_400 * 365, basicConstraints: "critical,CA:TRUE", keyUsage: "critical,keyCertSign,cRLSign",
                digest: .sha384),
            subjectKey: try rootKey.publicKey, issuer: nil, issuerKey: rootKey)
        intermediateKey = try PrivateKey.generate(.p256)
        intermediate = try CertificateBuilder.issue(
            CertificateTemplate(
                commonName: "Apple Application Integration CA 5 - G1", organization: "Apple Inc.", serial: 2,
                notBefore: time - 86_400 * 30, notAfter: time + 86_400 * 300, basicConstraints: "critical,CA:TRUE,pathlen:0",
                keyUsage: "critical,keyCertSign,cRLSign", digest: .sha384),
            subjectKey: try intermediateKey.publicKey, issuer: root, issuerKey: rootKey)
        signerKey = try PrivateKey.generate(.p256)
        signer = try CertificateBuilder.issue(
            CertificateTemplate(
                commonName: "Application Attestation Fraud Receipt Signing", organization: "Apple Inc.", serial: 3,
                notBefore: time - 86_400 * 10, notAfter: time + 86_400 * 200, basicConstraints: "critical,CA:FALSE",
                keyUsage: "critical,digitalSignature",
                extraExtensions: marker ? [.init(oid: Self.markerOID, isCritical: false, value: [0x05, 0x00])] : []),
            subjectKey: try signerKey.publicKey, issuer: intermediate, issuerKey: intermediateKey)
    }

    /// Another receipt signer under the same intermediate.
    package func anotherSigner() throws -> (Certificate, PrivateKey) {
        let key = try PrivateKey.generate(.p256)
        let certificate = try CertificateBuilder.issue(
            CertificateTemplate(
                commonName: "Application Attestation Fraud Receipt Signing", organization: "Apple Inc.", serial: 4,
                notBefore: signer.notBefore ?? 0, notAfter: signer.notAfter ?? 0, basicConstraints: "critical,CA:FALSE",
                keyUsage: "critical,digitalSignature",
                extraExtensions: [.init(oid: Self.markerOID, isCritical: false, value: [0x05, 0x00])]),
            subjectKey: try key.publicKey, issuer: intermediate, issuerKey: intermediateKey)
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
