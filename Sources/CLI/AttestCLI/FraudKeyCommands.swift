import AttestCrypto
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
        "key-file", value: "AuthKey.p8",
        help: "the DeviceCheck private key Apple let you download (PKCS#8 PEM, P-256); - reads it from standard input", required: true)
    static let secretsKeyFile = OptionSpec(
        "secrets-key-file", value: "FILE", help: "the 64 hex digits attestd's --secrets-key-file holds (openssl rand -hex 32)",
        required: true, environment: "ATTESTD_SECRETS_KEY_FILE")

    static let setFraudKey = Command(
        path: ["integration", "set-fraud-key"],
        summary: "Store the integration's DeviceCheck key (sealed) so attestd refreshes its devices' fraud-risk metric.",
        options: [keyID, keyFile, secretsKeyFile, StoreOptions.database, StoreOptions.actor, StoreOptions.json],
        positionals: ["CLIENT_ID"], run: runSetFraudKey)

    static func runSetFraudKey(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let clientID = options.positionals[0]
        let kid = options.required(keyID)
        guard IntegrationAdmin.isFraudKeyID(kid) else {
            throw UsageError(message: "--key-id takes the 10-character key ID (A-Z 0-9) Apple shows for the key")
        }
        let keyPath = options.required(keyFile)
        let secretsPath = options.required(secretsKeyFile)
        let pemBytes: [UInt8]
        let secretsBytes: [UInt8]
        do {
            // `-`: standard input, so that `sudo -u attestd attestctl ... --key-file - < AuthKey.p8`
            // reads a key the attestd user could not open in the operator's own directory.
            pemBytes = keyPath == "-" ? io.readStandardInput() : try io.readFile(keyPath)
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
        guard let store = StoreOptions.openStore(options, io) else { return ExitCode.failure }
        do {
            guard
                try StoreOptions.admin(store, io, options).setFraudKey(
                    clientID: clientID, keyID: kid, pem: pemBytes, secretsKey: secrets.key) != nil
            else {
                io.standardError("attestctl integration set-fraud-key: no integration \(clientID)\n")
                return ExitCode.failure
            }
        } catch  where error.code == .malformedRequest {
            throw UsageError(message: error.subcode == .field(.keyID) ? "--key-id takes \(error.reason)" : "--key-file \(error.reason)")
        } catch {
            io.standardError("attestctl integration set-fraud-key: \(error.reason)\n")
            return ExitCode.failure
        }
        if options.flag(StoreOptions.json) {
            io.standardOutput(JSONText.object([("client_id", clientID), ("key_id", kid), ("sealed", true)]) + "\n")
        } else {
            io.standardOutput("DeviceCheck key \(kid) set for \(clientID) (sealed); attestd refreshes receipts with --secrets-key-file\n")
        }
        return ExitCode.success
    }
}
