internal import COpenSSL

/// Signs CMS SignedData objects with OpenSSL, for synthetic receipts in tests only: nothing on the
/// verification or token path signs CMS (like `CertificateBuilder`, it exists for test PKIs).
package enum CMSBuilder {
    /// DER of a SignedData over `content` (encapsulated, id-data, SHA-256) by `signer`, carrying
    /// `certificates`, with its signature made in `form`.
    package static func sign(
        content: [UInt8], signer: Certificate, key: PrivateKey, certificates: [Certificate], form: CMSSignatureForm
    ) throws(CryptoError) -> [UInt8] {
        let data = try MemoryBIO(content)
        guard let stack = COpenSSL_sk_X509_new_null() else { throw OpenSSLErrorQueue.error(.internalFailure, "sk_X509_new_null") }
        defer { COpenSSL_sk_X509_free(stack) }
        for certificate in certificates where COpenSSL_sk_X509_push(stack, certificate.x509) <= 0 {
            throw OpenSSLErrorQueue.error(.internalFailure, "sk_X509_push")
        }
        var flags = CMS_BINARY | CMS_NOSMIMECAP
        if form == .content { flags |= CMS_NOATTR }
        guard let cms = withExtendedLifetime(certificates, { CMS_sign(signer.x509, key.pkey, stack, data.handle, UInt32(flags)) })
        else { throw OpenSSLErrorQueue.error(.internalFailure, "CMS_sign") }
        defer { CMS_ContentInfo_free(cms) }
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
