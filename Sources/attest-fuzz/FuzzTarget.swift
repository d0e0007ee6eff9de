import AttestCore

/// What one fuzz input goes through: the generic and the App Attest CBOR decoders, the
/// attestation and assertion parsers, and the whole attestation verifier (certificate parsing
/// by OpenSSL included). Every path must return or throw; none may crash, hang or allocate by a
/// declared length.
enum FuzzTarget {
    static let verifier: AttestationVerifier? = try? AttestationVerifier(anchor: TrustAnchor.appleAppAttestationRoot())
    static let appID: AppID? = try? AppID("6MURL8TA57.de.vincent-haupert.apple-appattest-poc")

    static func run(_ bytes: [UInt8]) {
        _ = try? CBORDecoder.decode(bytes[...], limits: .general)
        _ = try? CBORDecoder.decode(bytes[...], limits: .appAttest)
        _ = try? AuthenticatorData.parseAttestation(bytes)
        _ = try? AuthenticatorData.parseAssertion(bytes)
        _ = try? AssertionObject(cbor: bytes)
        guard (try? AttestationObject(cbor: bytes)) != nil, let verifier, let appID else { return }
        let input = AttestationInput(
            object: bytes, keyID: [UInt8](repeating: 0, count: 32), clientDataHash: [UInt8](repeating: 0, count: 32),
            appIDs: [appID], allowedEnvironments: Set(AppAttestEnvironment.allCases), time: 1_611_404_013)
        _ = try? verifier.verify(input)
    }
}
