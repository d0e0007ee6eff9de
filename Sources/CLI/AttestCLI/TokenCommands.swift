import AttestCrypto
import AttestOptions
import AttestService
import AttestStorage
import Foundation

/// `attestctl token revoke`: the lever for one access token.
enum TokenCommands {
    static let sha256 = OptionSpec("sha256", value: "HEX", help: "the token's SHA-256 (64 hex digits) instead of the token itself")

    static let revoke = Command(
        path: ["token", "revoke"],
        summary: "Revoke one access token (give the token, or its SHA-256 with --sha256): it stops working at once.",
        options: [sha256, StoreOptions.database, StoreOptions.actor], positionals: ["[TOKEN]"], run: runRevoke)

    static func runRevoke(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let token = options.positionals.first.flatMap { $0.isEmpty ? nil : $0 }
        let hash: [UInt8]
        switch (token, options.value(sha256)) {
        case (let token?, nil): hash = Digest.sha256(Array(token.utf8))
        case (nil, let hex?):
            guard let bytes = Hex.decode(hex), bytes.count == 32 else { throw UsageError(message: "--sha256 takes 64 hex digits") }
            hash = bytes
        default: throw UsageError(message: "give the token or --sha256, one of them")
        }
        return StoreOptions.administering("token revoke", options, io) { admin throws(ServiceError) -> Int32 in
            let found = try admin.revokeToken(hash: hash)
            io.standardOutput(
                found ? "revoked token \(Hex.encode(hash))\n" : "no live token \(Hex.encode(hash)) (expired or never issued)\n")
            return ExitCode.success
        }
    }
}
