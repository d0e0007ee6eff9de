import AttestCore
import AttestCrypto
import AttestOptions
import Foundation

/// `attestctl verify attestation` and `attestctl verify assertion`: offline verification of one
/// object, for operators debugging a device.
enum VerifyCommands {
    /// The options of `verify attestation`.
    enum Attestation {
        static let object = OptionSpec(
            "object", value: "FILE", help: "the attestation object in standard base64 ('-' reads stdin)", required: true)
        static let keyID = OptionSpec(
            "key-id", value: "B64", help: "the key ID the app reported (standard base64 of 32 bytes)", required: true)
        static let clientDataHash = OptionSpec(
            "client-data-hash", value: "B64", help: "the clientDataHash the app passed to attestKey (standard base64)", required: true)
        static let appID = OptionSpec("app-id", value: "TEAMID.BUNDLEID", help: "the App ID the key must belong to", required: true)
        static let at = OptionSpec("at", value: "UNIX_SECONDS", help: "verification time (default: now)")
        static let environment = OptionSpec(
            "environment", value: "production|development|any", help: "environments to accept (default: any)")
    }

    /// The options of `verify assertion`.
    enum Assertion {
        static let object = OptionSpec(
            "object", value: "FILE", help: "the assertion object in standard base64 ('-' reads stdin)", required: true)
        static let publicKey = OptionSpec(
            "public-key", value: "PEM_FILE", help: "the device's P-256 public key (PEM SubjectPublicKeyInfo)", required: true)
        static let clientDataHash = OptionSpec(
            "client-data-hash", value: "B64", help: "SHA-256 of the client data the app signed (standard base64)", required: true)
        static let appID = OptionSpec("app-id", value: "TEAMID.BUNDLEID", help: "the App ID the key belongs to", required: true)
        static let previousCounter = OptionSpec(
            "previous-counter", value: "N", help: "the stored counter; the assertion's must be greater (default: 0)")
    }

    /// The options of `verify receipt`.
    enum Receipt {
        static let object = OptionSpec(
            "object", value: "FILE", help: "the receipt (CMS) in standard base64 ('-' reads stdin)", required: true)
        static let appID = OptionSpec(
            "app-id", value: "TEAMID.BUNDLEID", help: "the attested App ID; field 2 must equal it", required: true)
        static let at = OptionSpec("at", value: "UNIX_SECONDS", help: "verification time (default: now)")
        static let certificate = OptionSpec(
            "certificate", value: "LEAF.pem", help: "the attestation's credential certificate; field 3 must be byte-identical")
    }

    static let attestation = Command(
        path: ["verify", "attestation"],
        summary: "Verify an attestation object against Apple's App Attestation root.",
        options: [
            Attestation.object, Attestation.keyID, Attestation.clientDataHash, Attestation.appID, Attestation.at, Attestation.environment,
        ],
        run: runAttestation)

    static let assertion = Command(
        path: ["verify", "assertion"],
        summary: "Verify an assertion object with a registered device key.",
        options: [Assertion.object, Assertion.publicKey, Assertion.clientDataHash, Assertion.appID, Assertion.previousCounter],
        run: runAssertion)

    static let receipt = Command(
        path: ["verify", "receipt"],
        summary: "Verify an App Attest receipt against Apple Root CA - G3.",
        options: [Receipt.object, Receipt.appID, Receipt.at, Receipt.certificate],
        run: runReceipt)

    static func runReceipt(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let appID = try appIDArgument(options.required(Receipt.appID))
        let time = try timeArgument(options, Receipt.at, io: io)
        let report: Report
        do {
            let receipt = try objectArgument(options.required(Receipt.object), io: io)
            let certificate = try options.value(Receipt.certificate).map { path throws(AttestError) in
                try certificateArgument(path, io: io).derBytes
            }
            let verified = try ReceiptVerifier.apple().verify(
                ReceiptInput(receipt: receipt, appID: appID, certificate: certificate, expectedType: nil, time: time))
            if verified.signatureForm == .contentDespiteSignedAttributes {
                io.standardError(
                    "attestctl verify receipt: note: the receipt has signed attributes but Apple signed its raw content "
                        + "(the early non-conformant form); the content's signature verified, the signed attributes are ignored\n")
            }
            report = Report(verified)
        } catch {
            report = Report(error)
        }
        return report.write(to: io)
    }

    static func runAttestation(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let keyID = try base64Argument(options, Attestation.keyID)
        let clientDataHash = try base64Argument(options, Attestation.clientDataHash)
        let appID = try appIDArgument(options.required(Attestation.appID))
        let time = try timeArgument(options, Attestation.at, io: io)
        let environments =
            try options.choice(
                Attestation.environment,
                among: ["production": [.production], "development": [.development], "any": Set(AppAttestEnvironment.allCases)])
            ?? Set(AppAttestEnvironment.allCases)
        let report: Report
        do {
            let object = try objectArgument(options.required(Attestation.object), io: io)
            let verifier = try AttestationVerifier(anchor: TrustAnchor.appleAppAttestationRoot())
            let verified = try verifier.verify(
                AttestationInput(
                    object: object, keyID: keyID, clientDataHash: clientDataHash, appIDs: [appID], allowedEnvironments: environments,
                    time: time))
            report = Report(verified)
        } catch {
            report = Report(error)
        }
        return report.write(to: io)
    }

    static func runAssertion(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let clientDataHash = try base64Argument(options, Assertion.clientDataHash)
        let appID = try appIDArgument(options.required(Assertion.appID))
        let previous = try options.integer(Assertion.previousCounter, in: 0...UInt32.max) ?? 0
        let report: Report
        do {
            let object = try objectArgument(options.required(Assertion.object), io: io)
            let key = try publicKeyArgument(options.required(Assertion.publicKey), io: io)
            let verified = try AssertionVerifier.verify(
                AssertionInput(object: object, clientDataHash: clientDataHash, publicKey: key, appIDs: [appID], previousCounter: previous))
            report = Report(verified, key: key)
        } catch {
            report = Report(error)
        }
        return report.write(to: io)
    }

    static func base64Argument(_ options: ParsedOptions, _ spec: OptionSpec) throws(UsageError) -> [UInt8] {
        guard let bytes = Base64Text.decode(options.required(spec)) else {
            throw UsageError(message: "--\(spec.name) is not standard base64 (RFC 4648, padded)")
        }
        return bytes
    }

    /// `--at` as Unix seconds, or now.
    static func timeArgument(_ options: ParsedOptions, _ spec: OptionSpec, io: ToolIO) throws(UsageError) -> Int64 {
        guard let at = options.value(spec) else { return io.now() }
        guard let seconds = Int64(at), seconds >= 0 else { throw UsageError(message: "--\(spec.name) takes Unix seconds, not '\(at)'") }
        return seconds
    }

    static func appIDArgument(_ text: String) throws(UsageError) -> AppID {
        do {
            return try AppID(text)
        } catch {
            throw UsageError(message: "--app-id: \(error.reason)")
        }
    }

    /// The object file's base64 text (surrounding whitespace allowed, none inside).
    static func objectArgument(_ path: String, io: ToolIO) throws(AttestError) -> [UInt8] {
        let text = try readInput(path, io: io)
        guard let bytes = Base64Text.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw AttestError(.objectEncoding, "the object file is not standard base64")
        }
        return bytes
    }

    static func publicKeyArgument(_ path: String, io: ToolIO) throws(AttestError) -> PublicKey {
        let text = try readInput(path, io: io)
        do {
            return try PublicKey(pem: text)
        } catch {
            throw AttestError(.invalidPublicKey, "the public key file is not a PEM public key")
        }
    }

    static func certificateArgument(_ path: String, io: ToolIO) throws(AttestError) -> Certificate {
        let text = try readInput(path, io: io)
        do {
            return try Certificate(pemEncoded: text)
        } catch {
            throw AttestError(.certificateEncoding, "the certificate file is not a PEM certificate")
        }
    }

    static func readInput(_ path: String, io: ToolIO) throws(AttestError) -> String {
        if path == "-" { return String(decoding: io.readStandardInput(), as: UTF8.self) }
        do {
            return String(decoding: try io.readFile(path), as: UTF8.self)
        } catch {
            throw AttestError(.inputUnreadable, "cannot read \(path)")
        }
    }
}
