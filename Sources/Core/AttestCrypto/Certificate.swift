internal import COpenSSL

/// One X.509 extension as found in a certificate: criticality and the raw DER of extnValue's content.
package struct CertificateExtension: Sendable, Hashable {
    /// Whether the extension is marked critical.
    package let isCritical: Bool
    /// The bytes inside the extnValue OCTET STRING.
    package let value: [UInt8]
}

/// An X.509 certificate owned by this object (an `X509`), parsed once and freed on deinit.
///
/// `@unchecked Sendable`: never mutated after parsing. OpenSSL 3 computes cached extension
/// data under its own lock, so concurrent read-only use (verification included) is safe.
package final class Certificate: @unchecked Sendable {
    let x509: OpaquePointer
    /// The exact DER bytes this certificate was parsed from.
    package let derBytes: [UInt8]

    /// Parses DER; trailing bytes after the certificate are an error.
    package init(derEncoded der: [UInt8]) throws(CryptoError) {
        var consumed = 0
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let result = d2i_X509(nil, &cursor, buffer.count)
            if let cursor, let base = buffer.baseAddress { consumed = cursor - base }
            return result
        }
        guard let parsed else { throw OpenSSLErrorQueue.error(.invalidCertificate, "d2i_X509") }
        guard consumed == der.count else {
            X509_free(parsed)
            throw CryptoError(.invalidCertificate, "\(der.count - consumed) bytes follow the certificate")
        }
        x509 = parsed
        derBytes = der
    }

    /// Parses the first PEM `CERTIFICATE` block of `pem`.
    package convenience init(pemEncoded pem: String) throws(CryptoError) {
        let bio = try MemoryBIO(Array(pem.utf8))
        guard let parsed = PEM_read_bio_X509(bio.handle, nil, nil, nil) else {
            throw OpenSSLErrorQueue.error(.invalidCertificate, "PEM_read_bio_X509")
        }
        defer { X509_free(parsed) }
        try self.init(derEncoded: Certificate.der(of: parsed))
    }

    /// Takes one more reference to an `X509` that OpenSSL already parsed (a CMS object's signer),
    /// so it is not parsed again; `derBytes` is its encoding.
    init(retaining x509: OpaquePointer) throws(CryptoError) {
        let der = try Certificate.der(of: x509)
        guard X509_up_ref(x509) == 1 else { throw OpenSSLErrorQueue.error(.internalFailure, "X509_up_ref") }
        self.x509 = x509
        derBytes = der
    }

    deinit { X509_free(x509) }

    static func der(of x509: OpaquePointer) throws(CryptoError) -> [UInt8] {
        let length = i2d_X509(x509, nil)
        guard length > 0 else { throw OpenSSLErrorQueue.error(.invalidCertificate, "i2d_X509") }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_X509(x509, &cursor)
        }
        return der
    }

    /// PEM text of the certificate.
    package var pem: String { Base64Text.pem(label: "CERTIFICATE", der: derBytes) }

    /// SHA-256 over the DER bytes.
    package var sha256Fingerprint: [UInt8] { Digest.sha256(derBytes) }

    /// Start of the validity period, in Unix seconds.
    package var notBefore: Int64? { Certificate.unixTime(X509_get0_notBefore(x509)) }

    /// End of the validity period, in Unix seconds.
    package var notAfter: Int64? { Certificate.unixTime(X509_get0_notAfter(x509)) }

    /// The subject as OpenSSL writes it on one line (`/C=US/O=Apple Inc./CN=...`), at most 511
    /// bytes: for operators' eyes (`/healthz`, `/metrics`), never for a decision.
    package var subject: String {
        guard let name = X509_get_subject_name(x509) else { return "" }
        var buffer = [CChar](repeating: 0, count: 512)
        guard X509_NAME_oneline(name, &buffer, Int32(buffer.count)) != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True when basicConstraints says CA:TRUE, or OpenSSL would otherwise treat it as a CA
    /// (keyCertSign without basicConstraints, self-signed v1).
    package var isCertificateAuthority: Bool {
        X509_get_extension_flags(x509) & UInt32(EXFLAG_CA) != 0 || X509_check_ca(x509) != 0
    }

    /// The subject public key.
    package var publicKey: PublicKey {
        get throws(CryptoError) {
            guard let key = X509_get_pubkey(x509) else {
                throw OpenSSLErrorQueue.error(.invalidPublicKey, "X509_get_pubkey")
            }
            return PublicKey(owning: key)
        }
    }

    /// Every extension whose OID is `oid` (dotted form), in certificate order.
    package func extensions(oid: String) -> [CertificateExtension] {
        guard let object = OBJ_txt2obj(oid, 1) else {
            _ = OpenSSLErrorQueue.drain()
            return []
        }
        defer { ASN1_OBJECT_free(object) }
        var found: [CertificateExtension] = []
        var index = X509_get_ext_by_OBJ(x509, object, -1)
        while index >= 0 {
            if let ext = X509_get_ext(x509, index), let data = X509_EXTENSION_get_data(ext) {
                let length = Int(ASN1_STRING_length(data))
                let bytes: [UInt8] =
                    if let start = ASN1_STRING_get0_data(data), length > 0 {
                        Array(UnsafeBufferPointer(start: start, count: length))
                    } else { [] }
                found.append(CertificateExtension(isCritical: X509_EXTENSION_get_critical(ext) != 0, value: bytes))
            }
            index = X509_get_ext_by_OBJ(x509, object, index)
        }
        return found
    }

    private static func unixTime(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else {
            _ = OpenSSLErrorQueue.drain()
            return nil
        }
        return CivilTime.unixSeconds(
            year: Int64(parts.tm_year) + 1900, month: Int64(parts.tm_mon) + 1, day: Int64(parts.tm_mday),
            hour: Int64(parts.tm_hour), minute: Int64(parts.tm_min), second: Int64(parts.tm_sec))
    }
}

/// Calendar arithmetic for UTC without the C library's time zone state.
package enum CivilTime {
    /// Unix seconds for a proleptic Gregorian UTC date and time (Howard Hinnant's days_from_civil).
    package static func unixSeconds(year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + hour * 3_600 + minute * 60 + second
    }
}
