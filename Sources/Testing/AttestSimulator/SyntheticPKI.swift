package import AttestCore
package import AttestCrypto

/// A throwaway App Attest PKI made at run time from fresh keys: a P-384 root and intermediate
/// shaped like Apple's, and credential certificates issued per attestation.
package struct SyntheticPKI: Sendable {
    package let rootKey: PrivateKey
    package let root: Certificate
    package let intermediateKey: PrivateKey
    package let intermediate: Certificate

    /// How the intermediate is made; tests change one field to break one CA rule (the simulator
    /// keeps the defaults).
    package struct IntermediateOptions: Sendable {
        package var basicConstraints: String? = "critical,CA:TRUE,pathlen:0"
        package var keyUsage: String? = "critical,keyCertSign,cRLSign"
        package init() {}
    }

    /// A root valid from a year before `time` to twenty years after, and an intermediate under it.
    package init(
        validAround time: Int64, rootName: String = "Synthetic App Attestation Root CA",
        intermediateOptions: IntermediateOptions = IntermediateOptions()
    ) throws(CryptoError) {
        let rootKey = try PrivateKey.generate(.p384)
        let root = try CertificateBuilder.issue(
            CertificateTemplate(
                commonName: rootName, organization: "attestd test PKI", serial: 1,
                notBefore: time - 365 * 86_400, notAfter: time + 20 * 365 * 86_400,
                basicConstraints: "critical,CA:TRUE", keyUsage: "critical,keyCertSign,cRLSign", digest: .sha384),
            subjectKey: try rootKey.publicKey, issuer: nil, issuerKey: rootKey)
        try self.init(rootKey: rootKey, root: root, validAround: time, intermediateOptions: intermediateOptions)
    }

    /// A new intermediate under an existing root.
    package init(
        rootKey: PrivateKey, root: Certificate, validAround time: Int64,
        intermediateOptions: IntermediateOptions = IntermediateOptions()
    ) throws(CryptoError) {
        let intermediateKey = try PrivateKey.generate(.p384)
        let intermediate = try CertificateBuilder.issue(
            CertificateTemplate(
                commonName: "Synthetic App Attestation CA 1", organization: "attestd test PKI", serial: 2,
                notBefore: time - 300 * 86_400, notAfter: time + 10 * 365 * 86_400,
                basicConstraints: intermediateOptions.basicConstraints, keyUsage: intermediateOptions.keyUsage,
                digest: .sha384),
            subjectKey: try intermediateKey.publicKey, issuer: root, issuerKey: rootKey)
        self.init(rootKey: rootKey, root: root, intermediateKey: intermediateKey, intermediate: intermediate)
    }

    /// Reassembles a PKI from saved parts (the simulator's state directory).
    package init(rootKey: PrivateKey, root: Certificate, intermediateKey: PrivateKey, intermediate: Certificate) {
        (self.rootKey, self.root, self.intermediateKey, self.intermediate) = (rootKey, root, intermediateKey, intermediate)
    }

    /// The root as a verifier anchor.
    package var anchor: TrustAnchor { TrustAnchor.custom(root) }

    /// A credential certificate for `key`, shaped like Apple's, carrying `nonceExtension`.
    package func credentialCertificate(
        for key: PublicKey, nonceExtension: CertificateTemplate.RawExtension?, leaf: LeafOptions, time: Int64
    ) throws(CryptoError) -> Certificate {
        var extensions = leaf.extraExtensions
        if let nonceExtension { extensions.insert(nonceExtension, at: 0) }
        return try CertificateBuilder.issue(
            CertificateTemplate(
                commonName: leaf.commonName, organization: "Apple Inc.", serial: leaf.serial,
                notBefore: leaf.notBefore ?? time - 60, notAfter: leaf.notAfter ?? time + 3 * 86_400,
                basicConstraints: leaf.basicConstraints, keyUsage: "critical,digitalSignature",
                extraExtensions: extensions, digest: .sha256),
            subjectKey: key, issuer: intermediate, issuerKey: intermediateKey)
    }
}

/// How the credential certificate is made; tests change one field to break one rule (the simulator
/// keeps the defaults).
package struct LeafOptions: Sendable {
    package var commonName = "synthetic credential"
    package var serial: UInt64 = 3
    package var notBefore: Int64?
    package var notAfter: Int64?
    package var basicConstraints: String? = "critical,CA:FALSE"
    /// A different subject key than the device key (wrong curve, RSA, another device).
    package var subjectKeyOverride: PrivateKey?
    package var extraExtensions: [CertificateTemplate.RawExtension] = []
    package init() {}
}
