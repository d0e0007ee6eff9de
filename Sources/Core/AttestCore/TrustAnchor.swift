package import AttestCrypto

/// The root an attestation chain must end at.
package struct TrustAnchor: Sendable {
    /// The root certificate.
    package let certificate: Certificate
    /// True for one of Apple's pinned roots; false for a test or demo anchor.
    package let isAppleRoot: Bool

    /// The root's SHA-256 fingerprint in lowercase hex: how devices, `/healthz` and `/metrics`
    /// name it.
    package var sha256Hex: String { Hex.encode(certificate.sha256Fingerprint) }
    /// When the root expires (Unix seconds); 0 if the certificate has no readable notAfter.
    package var notAfter: Int64 { certificate.notAfter ?? 0 }

    /// SHA-256 fingerprint of the Apple App Attestation Root CA
    /// (`1C:B9:82:3B:...:42:C9:32`, P-384, valid 2020-03-18 to 2045-03-15).
    package static let appleRootFingerprint: [UInt8] = [
        0x1C, 0xB9, 0x82, 0x3B, 0xA2, 0x8B, 0xA6, 0xAD, 0x2D, 0x33, 0xA0, 0x06, 0x94, 0x1D, 0xE2, 0xAE,
        0x4F, 0x51, 0x3E, 0xF1, 0xD4, 0xE8, 0x31, 0xB9, 0xF7, 0xE0, 0xFA, 0x7B, 0x62, 0x42, 0xC9, 0x32,
    ]

    /// Apple's App Attestation root, embedded in the binary so that no file can replace it; the
    /// fingerprint is checked every time it is loaded.
    package static func appleAppAttestationRoot() throws(AttestError) -> TrustAnchor {
        try appleRoot(pem: appleRootPEM, fingerprint: appleRootFingerprint)
    }

    /// SHA-256 fingerprint of Apple Root CA - G3 (`63:34:3A:BF:...:3E:91:79`, P-384, valid
    /// 2014-04-30 to 2039-04-30): the root of the receipts' CMS signatures, not of attestations.
    package static let appleRootCAG3Fingerprint: [UInt8] = [
        0x63, 0x34, 0x3A, 0xBF, 0xB8, 0x9A, 0x6A, 0x03, 0xEB, 0xB5, 0x7E, 0x9B, 0x3F, 0x5F, 0xA7, 0xBE,
        0x7C, 0x4F, 0x5C, 0x75, 0x6F, 0x30, 0x17, 0xB3, 0xA8, 0xC4, 0x88, 0xC3, 0x65, 0x3E, 0x91, 0x79,
    ]

    /// Apple Root CA - G3, embedded in the binary like the App Attestation root and checked against
    /// its pinned fingerprint every time it is loaded: the only anchor of receipt verification.
    package static func appleRootCAG3() throws(AttestError) -> TrustAnchor {
        try appleRoot(pem: appleRootCAG3PEM, fingerprint: appleRootCAG3Fingerprint)
    }

    /// The Apple anchor from `pem`, refused unless its fingerprint is the pinned one.
    static func appleRoot(pem: String, fingerprint: [UInt8]) throws(AttestError) -> TrustAnchor {
        let certificate: Certificate
        do {
            certificate = try Certificate(pemEncoded: pem)
        } catch {
            throw AttestError(.trustAnchor, "the Apple root does not parse: \(error.reason)")
        }
        guard certificate.sha256Fingerprint == fingerprint else {
            throw AttestError(.trustAnchor, "the Apple root's SHA-256 fingerprint is not the pinned one")
        }
        return TrustAnchor(certificate: certificate, isAppleRoot: true)
    }

    /// A non-Apple anchor (tests, demos, the simulator). Callers must make its use loud.
    package static func custom(pem: String) throws(AttestError) -> TrustAnchor {
        do {
            let certificate = try Certificate(pemEncoded: pem)
            return TrustAnchor(certificate: certificate, isAppleRoot: certificate.sha256Fingerprint == appleRootFingerprint)
        } catch {
            throw AttestError(.trustAnchor, "trust anchor does not parse as a PEM certificate: \(error.reason)")
        }
    }

    /// A non-Apple anchor from a certificate already in hand.
    package static func custom(_ certificate: Certificate) -> TrustAnchor {
        TrustAnchor(certificate: certificate, isAppleRoot: certificate.sha256Fingerprint == appleRootFingerprint)
    }

    static let appleRootPEM = """
        -----BEGIN CERTIFICATE-----
        MIICITCCAaegAwIBAgIQC/O+DvHN0uD7jG5yH2IXmDAKBggqhkjOPQQDAzBSMSYw
        JAYDVQQDDB1BcHBsZSBBcHAgQXR0ZXN0YXRpb24gUm9vdCBDQTETMBEGA1UECgwK
        QXBwbGUgSW5jLjETMBEGA1UECAwKQ2FsaWZvcm5pYTAeFw0yMDAzMTgxODMyNTNa
        Fw00NTAzMTUwMDAwMDBaMFIxJjAkBgNVBAMMHUFwcGxlIEFwcCBBdHRlc3RhdGlv
        biBSb290IENBMRMwEQYDVQQKDApBcHBsZSBJbmMuMRMwEQYDVQQIDApDYWxpZm9y
        bmlhMHYwEAYHKoZIzj0CAQYFK4EEACIDYgAERTHhmLW07ATaFQIEVwTtT4dyctdh
        NbJhFs/Ii2FdCgAHGbpphY3+d8qjuDngIN3WVhQUBHAoMeQ/cLiP1sOUtgjqK9au
        Yen1mMEvRq9Sk3Jm5X8U62H+xTD3FE9TgS41o0IwQDAPBgNVHRMBAf8EBTADAQH/
        MB0GA1UdDgQWBBSskRBTM72+aEH/pwyp5frq5eWKoTAOBgNVHQ8BAf8EBAMCAQYw
        CgYIKoZIzj0EAwMDaAAwZQIwQgFGnByvsiVbpTKwSga0kP0e8EeDS4+sQmTvb7vn
        53O5+FRXgeLhpJ06ysC5PrOyAjEAp5U4xDgEgllF7En3VcE3iexZZtKeYnpqtijV
        oyFraWVIyd/dganmrduC1bmTBGwD
        -----END CERTIFICATE-----

        """

    static let appleRootCAG3PEM = """
        -----BEGIN CERTIFICATE-----
        MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwSQXBwbGUgUm9v
        dCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9uIEF1dGhvcml0eTETMBEGA1UE
        CgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcNMTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2
        WjBnMRswGQYDVQQDDBJBcHBsZSBSb290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmlj
        YXRpb24gQXV0aG9yaXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqG
        SM49AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtfTjjTuxxE
        tX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517IDvYuVTZXpmkOlEKMaNC
        MEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySrMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0P
        AQH/BAQDAgEGMAoGCCqGSM49BAMDA2gAMGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3m
        eoyhpmvOwgPUnPWTxnS4at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkL
        F1vLUagM6BgD56KyKA==
        -----END CERTIFICATE-----

        """
}
