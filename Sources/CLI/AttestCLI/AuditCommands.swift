import AttestCrypto
import AttestOptions
import AttestService
import AttestStorage
import Foundation

/// `attestctl audit list`: the administrative actions, with the person behind each.
enum AuditCommands {
    static let since = OptionSpec("since", value: "UNIX_SECONDS", help: "only actions at or after this time (default: all)")

    static let list = Command(
        path: ["audit", "list"], summary: "List the administrative actions, oldest first, with the person behind each.",
        options: [since, StoreOptions.database, StoreOptions.actor, StoreOptions.json], run: runList)

    static func runList(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let start = try options.integer(since, in: 0...Int64.max, unit: " (Unix seconds)") ?? 0
        return StoreOptions.administering("audit list", options, io) { admin throws(ServiceError) -> Int32 in
            let entries = try admin.auditLog(since: start)
            if options.flag(StoreOptions.json) {
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
