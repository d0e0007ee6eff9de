import AttestCore
import AttestHTTP
import AttestObservability
import AttestService

extension Application {
    /// `attestd --check-config`: reads every file a start reads, with the same flags and
    /// environment (the settings file, the gateway secrets, the trust anchors, the secrets key),
    /// and opens nothing else: no database, no port. Each problem names its file, and its line
    /// and key where it has them, never a value. Empty: the next start gets past its files.
    ///
    /// The shipped unit's `ExecReload=` runs it before signalling, so `systemctl reload` fails on
    /// a file the next start would refuse instead of leaving it for the next upgrade to find.
    package static func checkConfiguration(_ configuration: ServerConfiguration) -> [String] {
        var problems: [String] = []
        func check(_ step: () throws -> Void) {
            do { try step() } catch { problems.append(String(describing: error)) }
        }
        if let file = configuration.configFile { check { _ = try LiveSettings.read(file) } }
        var anchor: TrustAnchor?
        check { anchor = try trustAnchor(configuration.trustAnchorFile) }
        if let file = configuration.additionalRootFile, let anchor {
            check { _ = try additionalRoot(file, primary: anchor, logger: Logger(sink: ClosureSink(write: { _ in }))) }
        }
        if let file = configuration.gatewaySecretFile { check { _ = try GatewaySecrets(file: file) } }
        if let file = configuration.secretsKeyFile { check { _ = try SecretsKeyFile(path: file) } }
        return problems
    }
}
