internal import COpenSSL

/// Signs CMS SignedData objects with OpenSSL, for synthetic receipts in tests only: nothing on the
/// verification or token path signs CMS (like `CertificateBuilder`, it exists for test PKIs).
package enum CMSBuilder {
    /// DER of a SignedData over `content` (SHA-256) by `signer`, carrying `certificates`, with its
    /// signature made in `form`. The rest exists for rejection tests: another encapsulated content
    /// type than id-data (dotted OID), detached content, further signers.
    package static func sign(
        content: [UInt8], signer: Certificate, key: PrivateKey, certificates: [Certificate], form: CMSSignatureForm,
        contentType: String? = nil, detached: Bool = false, otherSigners: [(Certificate, PrivateKey)] = []
    ) throws(CryptoError) -> [UInt8] {
        let data = try MemoryBIO(content)
        guard let stack = COpenSSL_sk_X509_new_null() else { throw OpenSSLErrorQueue.error(.internalFailure, "sk_X509_new_null") }
        defer { COpenSSL_sk_X509_free(stack) }
        for certificate in certificates where COpenSSL_sk_X509_push(stack, certificate.x509) <= 0 {
            throw OpenSSLErrorQueue.error(.internalFailure, "sk_X509_push")
        }
        var flags = CMS_BINARY | CMS_NOSMIMECAP
        if form == .content { flags |= CMS_NOATTR }
        if detached { flags |= CMS_DETACHED }
        guard let cms = withExtendedLifetime(certificates, { CMS_sign(nil, nil, stack, nil, UInt32(flags | CMS_PARTIAL)) })
        else { throw OpenSSLErrorQueue.error(.internalFailure, "CMS_sign") }
        defer { CMS_ContentInfo_free(cms) }
        if let contentType {
            guard let object = OBJ_txt2obj(contentType, 1) else { throw OpenSSLErrorQueue.error(.internalFailure, "OBJ_txt2obj") }
            defer { ASN1_OBJECT_free(object) }
            guard CMS_set1_eContentType(cms, object) == 1 else { throw OpenSSLErrorQueue.error(.internalFailure, "CMS_set1_eContentType") }
        }
        for (certificate, signingKey) in [(signer, key)] + otherSigners
        where CMS_add1_signer(cms, certificate.x509, signingKey.pkey, EVP_sha256(), UInt32(flags)) == nil {
            throw OpenSSLErrorQueue.error(.internalFailure, "CMS_add1_signer")
        }
        guard CMS_final(cms, data.handle, nil, UInt32(flags)) == 1 else { throw OpenSSLErrorQueue.error(.internalFailure, "CMS_final") }
        if form == .contentDespiteSignedAttributes {
            // Keep the signed attributes, but replace the signature with one over the raw content.
            guard let infos = CMS_get0_SignerInfos(cms), let info = COpenSSL_sk_CMS_SignerInfo_value(infos, 0),
                let signature = CMS_SignerInfo_get0_signature(info)
            else { throw OpenSSLErrorQueue.error(.internalFailure, "CMS_SignerInfo_get0_signature") }
            let raw = try key.sign(content, digest: .sha256)
            guard ASN1_STRING_set(signature, raw, Int32(raw.count)) == 1 else {
                throw OpenSSLErrorQueue.error(.internalFailure, "ASN1_STRING_set")
            }
        }
        let length = i2d_CMS_ContentInfo(cms, nil)
        guard length > 0 else { throw OpenSSLErrorQueue.error(.internalFailure, "i2d_CMS_ContentInfo") }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_CMS_ContentInfo(cms, &cursor)
        }
        return der
    }
}
