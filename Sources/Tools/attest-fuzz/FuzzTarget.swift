import AttestCore
import AttestHTTP

/// What one fuzz input goes through: every parser of untrusted input, each given the whole input.
/// AttestCore's: the generic and the App Attest CBOR decoders, authenticator data, the assertion
/// and attestation parsers, the whole attestation verifier (certificate parsing by OpenSSL
/// included), the receipt verifier (CMS parsing by OpenSSL) and the receipt payload with its
/// content checks. AttestHTTP's (`RequestParsers`): the JSON and form bodies, the field decoders,
/// the `Content-Type` and `Authorization` headers and the route patterns. Every path must return
/// or throw; none may crash, hang or allocate by a declared length.
///
/// Why every parser sees every input rather than a first byte choosing one: the formats choose for
/// themselves (a CBOR map, a DER SEQUENCE, `{`, text), so a parser given the wrong kind refuses it
/// within a few bytes and costs next to nothing, while the seeds stay real files (a recorded
/// object, a receipt, a body) and a crash input is exactly the bytes a client could send. And
/// libFuzzer keeps an input that is new to any parser, so a mutation one parser finds (a base64
/// run, a date) stays in the corpus for the others.
enum FuzzTarget {
    static let verifier: AttestationVerifier? = try? AttestationVerifier(anchor: TrustAnchor.appleAppAttestationRoot())
    static let receiptVerifier: ReceiptVerifier? = try? ReceiptVerifier.apple()
    static let appID: AppID? = try? AppID("6MURL8TA57.de.vincent-haupert.apple-appattest-poc")
    /// 2021-01-23T12:13:35Z: the recorded devices' attestations and receipts are valid then.
    static let time: Int64 = 1_611_404_013

    static func run(_ bytes: [UInt8]) {
        _ = try? CBORDecoder.decode(bytes[...], limits: .general)
        _ = try? CBORDecoder.decode(bytes[...], limits: .appAttest)
        _ = try? AuthenticatorData.parseAttestation(bytes)
        _ = try? AuthenticatorData.parseAssertion(bytes)
        _ = try? AssertionObject(cbor: bytes)
        RequestParsers.exercise(bytes)
        guard let appID else { return }
        let receipt = ReceiptInput(receipt: bytes, appID: appID, certificate: nil, expectedType: nil, time: time)
        _ = try? receiptVerifier?.verify(receipt)
        _ = try? ReceiptPayload(content: bytes).checkContent(against: receipt)
        guard (try? AttestationObject(cbor: bytes)) != nil, let verifier else { return }
        let input = AttestationInput(
            object: bytes, keyID: [UInt8](repeating: 0, count: 32), clientDataHash: [UInt8](repeating: 0, count: 32),
            appIDs: [appID], allowedEnvironments: Set(AppAttestEnvironment.allCases), time: time)
        _ = try? verifier.verify(input)
    }
}
