internal import COpenSSL

/// How the one signer of a verified CMS SignedData signed it.
package enum CMSSignatureForm: String, Sendable, Hashable, CaseIterable {
    /// RFC 5652 with signed attributes: the signature covers the DER of the signed attributes, whose
    /// message digest covers the content. OpenSSL's `CMS_verify` checked both.
    case signedAttributes = "signed_attributes"
    /// No signed attributes: the signature covers the content itself. OpenSSL's `CMS_verify`
    /// checked it. Every recorded Apple receipt is of this form.
    case content
    /// Signed attributes are present, yet the signature covers the raw content (not the attributes),
    /// so OpenSSL's `CMS_verify` refuses it. The content is authenticated by a signature verified here
    /// with the signer's key; the signed attributes are authenticated by nothing and are ignored.
    case contentDespiteSignedAttributes = "content_despite_signed_attributes"
}

/// Why a CMS SignedData object was refused after it parsed.
package enum CMSRejection: Sendable, Equatable {
    /// Not the shape a receipt has: not SignedData over id-data, content absent or detached, not
    /// exactly one signer, the signer's certificate missing.
    case shape(String)
    /// The signer's certificate does not chain to the pinned root at the verification time.
    case chain(ChainFailure, detail: String)
    /// The signature (or the signed attributes' message digest) does not verify.
    case signature(String)
}

/// The outcome of `CMSSignedData.verify`.
package enum CMSVerdict: Sendable {
    /// The content, the signer's certificate (chained to the pinned root), and how it was signed.
    case verified(content: [UInt8], signer: Certificate, form: CMSSignatureForm)
    case rejected(CMSRejection)
}

/// A CMS `ContentInfo` (RFC 5652) owned by this object (a `CMS_ContentInfo`), freed on deinit.
///
/// `@unchecked Sendable`: never mutated after parsing except by `verify`, which OpenSSL only lets
/// set the signer certificates it found (the same ones on every call); callers verify one object
/// from one thread (the verifier makes one per receipt).
package final class CMSSignedData: @unchecked Sendable {
    let handle: OpaquePointer

    /// Parses BER or DER (Apple writes both); bytes after the object are an error
    /// (`cmsTrailingBytes`), anything unparsable is `invalidCMS`.
    ///
    /// Why `d2i_CMS_ContentInfo` over a pointer and not `d2i_CMS_bio`: the pointer form says exactly
    /// how many bytes the object used; the BIO form reads ahead in chunks, so trailing bytes after an
    /// indefinite-length object can vanish unseen.
    package init(berEncoded bytes: [UInt8]) throws(CryptoError) {
        var consumed = 0
        let parsed: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let result = d2i_CMS_ContentInfo(nil, &cursor, buffer.count)
            if let cursor, let base = buffer.baseAddress { consumed = cursor - base }
            return result
        }
        guard let parsed else { throw OpenSSLErrorQueue.error(.invalidCMS, "d2i_CMS_ContentInfo") }
        guard consumed == bytes.count else {
            CMS_ContentInfo_free(parsed)
            throw CryptoError(.cmsTrailingBytes, "\(bytes.count - consumed) bytes follow the CMS object")
        }
        handle = parsed
    }

    deinit { CMS_ContentInfo_free(handle) }

    /// Verifies the one signer's signature over the encapsulated content and its certificate's path
    /// to `root` alone at `time` (Unix seconds); returns the content.
    ///
    /// The trust store is made per call and holds exactly `root`: never the system store (no
    /// `X509_STORE_set_default_paths`), never a certificate from the object. The object's own
    /// certificates (Apple's receipts carry a copy of their root) are untrusted helpers for path
    /// building, which OpenSSL must still end at the store's root.
    package func verify(root: Certificate, at time: Int64) -> CMSVerdict {
        guard OBJ_obj2nid(CMS_get0_type(handle)) == NID_pkcs7_signed else {
            return .rejected(.shape("the CMS object is not SignedData"))
        }
        guard OBJ_obj2nid(CMS_get0_eContentType(handle)) == NID_pkcs7_data else {
            return .rejected(.shape("the encapsulated content type is not id-data"))
        }
        guard let slot = CMS_get0_content(handle), let octets = slot.pointee else {
            return .rejected(.shape("the SignedData carries no content"))
        }
        guard let infos = CMS_get0_SignerInfos(handle), COpenSSL_sk_CMS_SignerInfo_num(infos) == 1,
            let info = COpenSSL_sk_CMS_SignerInfo_value(infos, 0)
        else { return .rejected(.shape("the SignedData does not have exactly one signer")) }
        let content = Self.bytes(of: octets)

        let store: TrustStore
        do {
            store = try TrustStore(anchor: root, partialChain: false)
        } catch {
            return .rejected(.shape("cannot build the trust store: \(error.reason)"))
        }
        X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store.handle), time_t(time))

        // The flags, each chosen:
        // - CMS_BINARY: the content is verified as the exact bytes, never canonicalised as MIME text
        //   (it only matters for detached content, which is refused above; stated for the reader).
        // - CMS_NOCRL: CRLs inside the object are the sender's; attestd does no revocation checking.
        // Deliberately absent: CMS_NO_SIGNER_CERT_VERIFY (the signer must chain to the root),
        // CMS_NO_ATTR_VERIFY and CMS_NO_CONTENT_VERIFY (both signatures are checked), CMS_NOINTERN
        // (the signer's certificate comes from the object itself). No certificates are passed in.
        // The path check uses OpenSSL's CMS default purpose (S/MIME signing: digitalSignature key
        // usage, no foreign EKU), which every recorded Apple receipt signer meets.
        let flags = UInt32(CMS_BINARY | CMS_NOCRL)
        if CMS_verify(handle, nil, store.handle, nil, nil, flags) == 1 {
            _ = OpenSSLErrorQueue.drain()
            guard let signer = signerCertificate(info) else { return .rejected(.shape("the signer's certificate is missing")) }
            let form: CMSSignatureForm = CMS_signed_get_attr_count(info) > 0 ? .signedAttributes : .content
            return .verified(content: content, signer: signer, form: form)
        }
        let (reasons, message) = OpenSSLErrorQueue.drainCMSReasons()
        if reasons.contains(CMS_R_CERTIFICATE_VERIFY_ERROR) {
            return .rejected(chainRejection(store: store, time: time, message: message))
        }
        if reasons.contains(CMS_R_SIGNER_CERTIFICATE_NOT_FOUND) || reasons.contains(CMS_R_NO_SIGNERS) {
            return .rejected(.shape("the signer's certificate is not in the object (\(message))"))
        }
        guard CMS_signed_get_attr_count(info) > 0 else { return .rejected(.signature(message)) }
        return verifyContentDespiteSignedAttributes(info, content: content, store: store, openSSLMessage: message)
    }

    /// Early Apple receipts may carry signed attributes yet sign the raw content. Detected here
    /// explicitly (signed attributes present, `CMS_verify` refused the signature), then: the signer's
    /// path is checked again by `CMS_verify` with only the signature checks turned off, the digest
    /// algorithm must be SHA-256, and the signature must verify over the exact content bytes with the
    /// signer's key. Anything else is the signature failure `CMS_verify` reported.
    private func verifyContentDespiteSignedAttributes(
        _ info: OpaquePointer, content: [UInt8], store: TrustStore, openSSLMessage: String
    ) -> CMSVerdict {
        let pathOnly = UInt32(CMS_BINARY | CMS_NOCRL | CMS_NO_ATTR_VERIFY | CMS_NO_CONTENT_VERIFY)
        guard CMS_verify(handle, nil, store.handle, nil, nil, pathOnly) == 1 else {
            let (_, message) = OpenSSLErrorQueue.drainCMSReasons()
            return .rejected(.signature("\(openSSLMessage); path re-check failed: \(message)"))
        }
        var digestAlgorithm: UnsafeMutablePointer<X509_ALGOR>?
        CMS_SignerInfo_get0_algs(info, nil, nil, &digestAlgorithm, nil)
        var digestObject: OpaquePointer?
        if let digestAlgorithm { X509_ALGOR_get0(&digestObject, nil, nil, UnsafePointer(digestAlgorithm)) }
        guard let digestObject, OBJ_obj2nid(digestObject) == NID_sha256 else {
            return .rejected(.signature("\(openSSLMessage); the digest algorithm is not SHA-256"))
        }
        guard let signer = signerCertificate(info), let key = try? signer.publicKey,
            let signatureString = CMS_SignerInfo_get0_signature(info)
        else { return .rejected(.signature("\(openSSLMessage); no signer key or signature")) }
        guard key.verifySignature(Self.bytes(of: signatureString), over: content, digest: .sha256) else {
            return .rejected(.signature(openSSLMessage))
        }
        return .verified(content: content, signer: signer, form: .contentDespiteSignedAttributes)
    }

    /// Why the path failed, from OpenSSL's own path validation of the signer with the object's
    /// certificates as untrusted helpers (`CMS_verify` reports only that it failed).
    private func chainRejection(store: TrustStore, time: Int64, message: String) -> CMSRejection {
        var signerX509: OpaquePointer?
        if let infos = CMS_get0_SignerInfos(handle), let info = COpenSSL_sk_CMS_SignerInfo_value(infos, 0) {
            CMS_SignerInfo_get0_algs(info, nil, &signerX509, nil, nil)
        }
        guard let signerX509, let signer = try? Certificate(retaining: signerX509) else {
            return .chain(.other, detail: message)
        }
        let helpers = certificates()
        guard let (error, depth, text) = store.validate(leaf: signer, untrusted: helpers, at: time) else {
            // OpenSSL's plain path validation passed where the CMS one (S/MIME purpose) did not.
            return .chain(.other, detail: message)
        }
        return .chain(ChainFailure(openSSLError: error), detail: "OpenSSL \(error) at depth \(depth): \(text)")
    }

    /// The signer's certificate as `CMS_verify` resolved it from the object's certificates.
    private func signerCertificate(_ info: OpaquePointer) -> Certificate? {
        var signer: OpaquePointer?
        CMS_SignerInfo_get0_algs(info, nil, &signer, nil, nil)
        guard let signer else { return nil }
        return try? Certificate(retaining: signer)
    }

    /// The certificates the object carries, in order.
    package func certificates() -> [Certificate] {
        guard let stack = CMS_get1_certs(handle) else {
            _ = OpenSSLErrorQueue.drain()
            return []
        }
        defer { COpenSSL_sk_X509_pop_free(stack) }
        return (0..<COpenSSL_sk_X509_num(stack)).compactMap { index in
            COpenSSL_sk_X509_value(stack, index).flatMap { try? Certificate(retaining: $0) }
        }
    }

    static func bytes(of string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        let length = Int(ASN1_STRING_length(string))
        guard length > 0, let start = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: start, count: length))
    }

    static func bytes(of string: UnsafeMutablePointer<ASN1_STRING>) -> [UInt8] { bytes(of: UnsafePointer(string)) }
}
