internal import COpenSSL

/// What a certificate issued by `CertificateBuilder` says. Used to build test PKIs and the
/// simulator's synthetic Apple-like chain; the production verifier never issues certificates.
package struct CertificateTemplate: Sendable {
    /// One extension to add verbatim.
    package struct RawExtension: Sendable {
        package var oid: String
        package var isCritical: Bool
        package var value: [UInt8]

        package init(oid: String, isCritical: Bool, value: [UInt8]) { (self.oid, self.isCritical, self.value) = (oid, isCritical, value) }
    }

    package var commonName: String
    package var organization: String?
    package var serial: UInt64
    package var notBefore: Int64
    package var notAfter: Int64
    /// `basicConstraints` in OpenSSL config syntax, e.g. "critical,CA:TRUE"; nil leaves it out.
    package var basicConstraints: String?
    /// `keyUsage` in OpenSSL config syntax, e.g. "critical,keyCertSign,cRLSign"; nil leaves it out.
    package var keyUsage: String?
    package var extraExtensions: [RawExtension]
    package var digest: DigestAlgorithm

    package init(
        commonName: String, organization: String? = nil, serial: UInt64 = 1, notBefore: Int64, notAfter: Int64,
        basicConstraints: String? = nil, keyUsage: String? = nil, extraExtensions: [RawExtension] = [],
        digest: DigestAlgorithm = .sha256
    ) {
        self.commonName = commonName
        self.organization = organization
        self.serial = serial
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.basicConstraints = basicConstraints
        self.keyUsage = keyUsage
        self.extraExtensions = extraExtensions
        self.digest = digest
    }
}

/// Issues X.509 v3 certificates with OpenSSL.
///
/// Exists for the synthetic PKI only (`AttestSimulator`, which `attestctl simulate` ships, and the
/// tests through it): nothing on the verification or token path issues a certificate.
package enum CertificateBuilder {
    /// Issues a certificate for `subjectKey`, signed by `issuerKey`; with no `issuer` it is self-signed.
    package static func issue(
        _ template: CertificateTemplate, subjectKey: PublicKey, issuer: Certificate?, issuerKey: PrivateKey
    ) throws(CryptoError) -> Certificate {
        guard let x509 = X509_new() else { throw OpenSSLErrorQueue.error(.internalFailure, "X509_new") }
        defer { X509_free(x509) }
        guard X509_set_version(x509, 2) == 1,
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), template.serial) == 1,
            ASN1_TIME_set(X509_getm_notBefore(x509), time_t(template.notBefore)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(template.notAfter)) != nil,
            X509_set_pubkey(x509, subjectKey.pkey) == 1
        else { throw OpenSSLErrorQueue.error(.internalFailure, "setting certificate fields") }

        guard let name = X509_NAME_new() else { throw OpenSSLErrorQueue.error(.internalFailure, "X509_NAME_new") }
        defer { X509_NAME_free(name) }
        guard X509_NAME_add_entry_by_txt(name, "CN", COpenSSL_MBSTRING_ASC(), template.commonName, -1, -1, 0) == 1
        else { throw OpenSSLErrorQueue.error(.internalFailure, "X509_NAME_add_entry_by_txt CN") }
        if let organization = template.organization,
            X509_NAME_add_entry_by_txt(name, "O", COpenSSL_MBSTRING_ASC(), organization, -1, -1, 0) != 1
        {
            throw OpenSSLErrorQueue.error(.internalFailure, "X509_NAME_add_entry_by_txt O")
        }
        guard X509_set_subject_name(x509, name) == 1 else {
            throw OpenSSLErrorQueue.error(.internalFailure, "X509_set_subject_name")
        }
        let issuerName = issuer.map { X509_get_subject_name($0.x509) } ?? name
        guard X509_set_issuer_name(x509, issuerName) == 1 else {
            throw OpenSSLErrorQueue.error(.internalFailure, "X509_set_issuer_name")
        }

        if let value = template.basicConstraints { try addConfigured(NID_basic_constraints, value, to: x509) }
        if let value = template.keyUsage { try addConfigured(NID_key_usage, value, to: x509) }
        for raw in template.extraExtensions { try addRaw(raw, to: x509) }

        guard X509_sign(x509, issuerKey.pkey, template.digest.evp) > 0 else {
            throw OpenSSLErrorQueue.error(.internalFailure, "X509_sign")
        }
        return try Certificate(derEncoded: Certificate.der(of: x509))
    }

    private static func addConfigured(_ nid: Int32, _ value: String, to x509: OpaquePointer) throws(CryptoError) {
        guard let ext = X509V3_EXT_conf_nid(nil, nil, nid, value) else {
            throw OpenSSLErrorQueue.error(.internalFailure, "X509V3_EXT_conf_nid \(value)")
        }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(x509, ext, -1) == 1 else { throw OpenSSLErrorQueue.error(.internalFailure, "X509_add_ext") }
    }

    private static func addRaw(_ raw: CertificateTemplate.RawExtension, to x509: OpaquePointer) throws(CryptoError) {
        guard let object = OBJ_txt2obj(raw.oid, 1) else {
            throw OpenSSLErrorQueue.error(.internalFailure, "OBJ_txt2obj \(raw.oid)")
        }
        defer { ASN1_OBJECT_free(object) }
        guard let octets = ASN1_OCTET_STRING_new() else {
            throw OpenSSLErrorQueue.error(.internalFailure, "ASN1_OCTET_STRING_new")
        }
        defer { ASN1_OCTET_STRING_free(octets) }
        guard ASN1_OCTET_STRING_set(octets, raw.value, Int32(raw.value.count)) == 1,
            let ext = X509_EXTENSION_create_by_OBJ(nil, object, raw.isCritical ? 1 : 0, octets)
        else { throw OpenSSLErrorQueue.error(.internalFailure, "X509_EXTENSION_create_by_OBJ") }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(x509, ext, -1) == 1 else { throw OpenSSLErrorQueue.error(.internalFailure, "X509_add_ext") }
    }
}
