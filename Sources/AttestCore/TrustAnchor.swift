package import AttestCrypto

/// The root an attestation chain must end at.
package struct TrustAnchor: Sendable {
    /// The root certificate.
    package let certificate: Certificate
    /// True for Apple's pinned root; false for a test or demo anchor.
    package let isAppleRoot: Bool

    /// SHA-256 fingerprint of the Apple App Attestation Root CA
    /// (`1C:B9:82:3B:...:42:C9:32`, P-384, valid 2020-03-18 to 2045-03-15).
    package static let appleRootFingerprint: [UInt8] = [
        0x1C, 0xB9, 0x82, 0x3B, 0xA2, 0x8B, 0xA6, 0xAD, 0x2D, 0x33, 0xA0, 0x06, 0x94, 0x1D, 0xE2, 0xAE,
        0x4F, 0x51, 0x3E, 0xF1, 0xD4, 0xE8, 0x31, 0xB9, 0xF7, 0xE0, 0xFA, 0x7B, 0x62, 0x42, 0xC9, 0x32,
    ]

    /// Apple's App Attestation root, embedded in the binary so that no file can replace it; the
    /// fingerprint is checked every time it is loaded.
    package static func appleAppAttestationRoot() throws(AttestError) -> TrustAnchor {
        try appleRoot(pem: appleRootPEM)
    }

    /// The Apple anchor from `pem`, refused unless its fingerprint is the pinned one.
    static func appleRoot(pem: String) throws(AttestError) -> TrustAnchor {
        let certificate: Certificate
        do {
            certificate = try Certificate(pemEncoded: pem)
        } catch {
            throw AttestError(.trustAnchor, "the Apple root does not parse: \(error.reason)")
        }
        guard certificate.sha256Fingerprint == appleRootFingerprint else {
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
}
