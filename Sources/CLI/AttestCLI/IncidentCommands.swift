import AttestCrypto
import AttestOptions
import AttestService
import Foundation

/// The levers for one token or one device, and the audit log: `attestctl token revoke`,
/// `attestctl device block`, `attestctl audit list`.
enum IncidentCommands {
    static let sha256 = OptionSpec("sha256", value: "HEX", help: "the token's SHA-256 (64 hex digits) instead of the token itself")
    static let since = OptionSpec("since", value: "UNIX_SECONDS", help: "only actions at or after this time (default: all)")

    static let revokeToken = Command(
        path: ["token", "revoke"],
        summary: "Revoke one access token (give the token, or its SHA-256 with --sha256): it stops working at once.",
        options: [sha256, IntegrationCommands.database, IntegrationCommands.actor], positionals: ["[TOKEN]"], run: runRevokeToken)

    static let blockDevice = Command(
        path: ["device", "block"],
        summary: "Block one device key (standard base64 or 64 hex digits): its tokens stop working at once, it can never refresh again.",
        options: [IntegrationCommands.database, IntegrationCommands.actor], positionals: ["KEY_ID"], run: runBlockDevice)

    static let auditList = Command(
        path: ["audit", "list"], summary: "List the administrative actions, oldest first, with the person behind each.",
        options: [since, IntegrationCommands.database, IntegrationCommands.actor, IntegrationCommands.json], run: runAuditList)

    static func runRevokeToken(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let token = options.positionals.first.flatMap { $0.isEmpty ? nil : $0 }
        let hash: [UInt8]
        switch (token, options.value(sha256)) {
        case (let token?, nil): hash = Digest.sha256(Array(token.utf8))
        case (nil, let hex?):
            guard let bytes = Hex.decode(hex), bytes.count == 32 else { throw UsageError(message: "--sha256 takes 64 hex digits") }
            hash = bytes
        default: throw UsageError(message: "give the token or --sha256, one of them")
        }
        return IntegrationCommands.administering("token revoke", options, io) { admin throws(ServiceError) -> Int32 in
            let found = try admin.revokeToken(hash: hash)
            io.standardOutput(
                found ? "revoked token \(Hex.encode(hash))\n" : "no live token \(Hex.encode(hash)) (expired or never issued)\n")
            return ExitCode.success
        }
    }

    /// A device's KEY_ID argument: the 32-byte key ID as 64 hex digits (as `device list` prints it) or
    /// standard base64 (as the app sends it). Shared by `device block` and `device show`.
    static func keyID(_ text: String) throws(UsageError) -> [UInt8] {
        guard let keyID = Hex.decode(text).flatMap({ $0.count == 32 ? $0 : nil }) ?? Base64Text.decode(text, .standard), keyID.count == 32
        else { throw UsageError(message: "KEY_ID takes the 32-byte key ID as standard base64 (as the app sends it) or 64 hex digits") }
        return keyID
    }

    static func runBlockDevice(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let text = options.positionals[0]
        let keyID = try keyID(text)
        return IntegrationCommands.administering("device block", options, io) { admin throws(ServiceError) -> Int32 in
            guard let tokens = try admin.blockDevice(keyID: keyID) else {
                io.standardError("attestctl device block: no device \(text)\n")
                return ExitCode.failure
            }
            io.standardOutput("blocked device \(Hex.encode(keyID)): \(tokens) tokens revoked\n")
            return ExitCode.success
        }
    }

    static func runAuditList(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let start = try options.integer(since, in: 0...Int64.max, unit: " (Unix seconds)") ?? 0
        return IntegrationCommands.administering("audit list", options, io) { admin throws(ServiceError) -> Int32 in
            let entries = try admin.auditLog(since: start)
            if options.flag(IntegrationCommands.json) {
                let values = entries.map { entry in
                    JSONValue.object([
                        ("action", entry.action.rawValue), ("actor", entry.actor), ("at", entry.at), ("detail", entry.detail),
                        ("target", entry.target),
                    ])
                }
                io.standardOutput(JSONText.render(.array(values), pretty: true) + "\n")
            } else {
                for entry in entries {
                    io.standardOutput("\(entry.at)  \(entry.actor)  \(entry.action.rawValue)  \(entry.target)  \(entry.detail)\n")
                }
            }
            return ExitCode.success
        }
    }
}
