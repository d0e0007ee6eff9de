import AttestCrypto
import AttestObservability
import AttestOptions
import AttestService
import AttestStorage

/// `attestctl integration set-fraud-key`: registers the integration owner's DeviceCheck key, with
/// which attestd exchanges its devices' receipts with Apple for a fresh fraud-risk metric.
///
/// The key is sealed (AES-256-GCM) with the secrets key before it reaches the database, and is
/// never printed or logged: not in `--json` output, not in the audit log (which records the key ID).
enum FraudKeyCommands {
    static let keyID = OptionSpec(
        "key-id", value: "KID", help: "the DeviceCheck key's ID (10 of A-Z 0-9, as Apple shows it)", required: true)
    static let keyFile = OptionSpec(
        "key-file", value: "AuthKey.p8", help: "the DeviceCheck private key Apple let you download (PKCS#8 PEM, P-256)", required: true)
    static let secretsKeyFile = OptionSpec(
        "secrets-key-file", value: "FILE", help: "the 64 hex digits attestd's --secrets-key-file holds (openssl rand -hex 32)",
        required: true, environment: "ATTESTD_SECRETS_KEY_FILE")

    static let setFraudKey = Command(
        path: ["integration", "set-fraud-key"],
        summary: "Store the integration's DeviceCheck key (sealed) so attestd refreshes its devices' fraud-risk metric.",
        options: [keyID, keyFile, secretsKeyFile, IntegrationCommands.database, IntegrationCommands.actor, IntegrationCommands.json],
        positionals: ["CLIENT_ID"], run: runSetFraudKey)

    static func runSetFraudKey(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let clientID = options.positionals[0]
        let kid = options.required(keyID)
        guard kid.utf8.count == 10,
            kid.utf8.allSatisfy({
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            })
        else { throw UsageError(message: "--key-id takes the 10-character key ID (A-Z 0-9) Apple shows for the key") }
        let keyPath = options.required(keyFile)
        let secretsPath = options.required(secretsKeyFile)
        let pemBytes: [UInt8]
        let secretsBytes: [UInt8]
        do {
            pemBytes = try io.readFile(keyPath)
        } catch {
            io.standardError("attestctl integration set-fraud-key: cannot read \(keyPath)\n")
            return ExitCode.failure
        }
        do {
            secretsBytes = try io.readFile(secretsPath)
        } catch {
            io.standardError("attestctl integration set-fraud-key: cannot read the secrets key file \(secretsPath)\n")
            return ExitCode.failure
        }
        // Validate before anything is stored: the refresher signs with this key, so it must be a P-256 key.
        guard let key = try? PrivateKey(pem: String(decoding: pemBytes, as: UTF8.self)), key.curve == .p256 else {
            throw UsageError(message: "--key-file must be a DeviceCheck private key: a PKCS#8 PEM EC P-256 key (AuthKey_KID.p8)")
        }
        let secrets: SecretsKeyFile
        do {
            secrets = try SecretsKeyFile(path: secretsPath, contents: secretsBytes)
        } catch {
            io.standardError("attestctl integration set-fraud-key: \(error.description)\n")
            return ExitCode.failure
        }
        if secrets.readableByOthers {
            io.standardError("attestctl: warning: the secrets key file \(secretsPath) can be read by other users: chmod 600 it\n")
        }
        guard let store = IntegrationCommands.openStore(options, io) else { return ExitCode.failure }
        let person = IntegrationCommands.actorName(options, io)
        let now = io.now()
        do {
            let sealed = try SealedBox.seal(
                pemBytes, key: secrets.key, associatedData: FraudKeySealing.associatedData(clientID: clientID, keyID: kid))
            guard try store.setFraudKey(clientID: clientID, keyID: kid, sealedKey: sealed, at: now) != nil else {
                io.standardError("attestctl integration set-fraud-key: no integration \(clientID)\n")
                return ExitCode.failure
            }
            try store.appendAudit(
                AuditEntry(
                    at: now, actor: person + " (attestctl)", action: "integration.set-fraud-key", target: clientID, detail: "key id \(kid)")
            )
        } catch let error as CryptoError {
            io.standardError("attestctl integration set-fraud-key: sealing failed: \(error.code.rawValue)\n")
            return ExitCode.failure
        } catch let error as StorageError {
            io.standardError("attestctl integration set-fraud-key: \(error.reason)\n")
            return ExitCode.failure
        } catch {
            io.standardError("attestctl integration set-fraud-key: failed\n")
            return ExitCode.failure
        }
        let logger = Logger(
            sink: ClosureSink(write: { line in io.standardError(line + "\n") }), fields: ["actor": person, "tool": "attestctl"])
        logger.log(.info, "DeviceCheck key set", ["client.id": .string(clientID), "fraud_key.id": .string(kid)])
        if options.flag(IntegrationCommands.json) {
            io.standardOutput(JSONText.object([("client_id", clientID), ("key_id", kid), ("sealed", true)]) + "\n")
        } else {
            io.standardOutput("DeviceCheck key \(kid) set for \(clientID) (sealed); attestd refreshes receipts with --secrets-key-file\n")
        }
        return ExitCode.success
    }
}
