import AttestCrypto
import AttestOptions
import AttestService
import AttestStorage
import Foundation

/// `attestctl audit list`: the administrative actions, newest first, with the person behind each.
enum AuditCommands {
    static let since = OptionSpec("since", value: "UNIX_SECONDS", help: "only actions at or after this time (default: all)")
    static let until = OptionSpec("until", value: "UNIX_SECONDS", help: "only actions at or before this time")
    static let action = OptionSpec(
        "action", value: "ACTIONS", help: "only these actions (comma-separated, e.g. device.block,token.revoke), or changes, or sign-ins")
    static let actorFilter = OptionSpec("by", value: "TEXT", help: "only actions whose actor contains TEXT")
    static let target = OptionSpec("target", value: "TEXT", help: "only actions whose target starts with TEXT")
    static let workspace = OptionSpec("workspace", value: "WORKSPACE_ID", help: "only the actions a workspace's admins see")
    static let limit = OptionSpec("limit", value: "N", help: "at most N actions (default: all); says how to list the older ones")
    static let before = OptionSpec("before", value: "ID", help: "only actions older than the one with this ID (as --limit says)")

    static let list = Command(
        path: ["audit", "list"], summary: "List the administrative actions, newest first, with the person behind each.",
        options: [
            since, until, action, actorFilter, target, workspace, limit, before, StoreOptions.database, StoreOptions.actor,
            StoreOptions.json,
        ],
        run: runList)

    static func value(_ row: AuditListEntry) -> JSONValue {
        let entry = row.entry
        return JSONValue.object([
            ("action", entry.action.rawValue), ("actor", entry.actor), ("at", entry.at), ("detail", entry.detail), ("id", row.id),
            ("target", entry.target), ("workspace_id", entry.workspaceID),
        ])
    }

    static func query(_ options: ParsedOptions) throws(UsageError) -> (query: AuditQuery, limit: Int?) {
        var query = AuditQuery(workspaceID: options.value(workspace), limit: AuditQuery.maximumLimit)
        query.from = try options.integer(since, in: 0...Int64.max, unit: " (Unix seconds)")
        query.to = try options.integer(until, in: 0...Int64.max, unit: " (Unix seconds)")
        query.before = try options.integer(before, in: 1...Int64.max)
        query.actor = options.value(actorFilter)
        query.target = options.value(target)
        if let text = options.value(action) {
            guard let actions = AuditAction.named(text) else {
                throw UsageError(
                    message: "--action: changes, sign-ins or actions among \(AuditAction.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            query.actions = actions
        }
        let most: Int? = try options.integer(limit, in: 1...Int.max)
        return (query, most)
    }

    /// Every matching row, a page at a time, each printed as it comes (a JSON array stays one
    /// array): nothing is left out silently; with --limit, the command says how to go on.
    static func runList(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        var (query, most) = try query(options)
        let json = options.flag(StoreOptions.json)
        return StoreOptions.administering("audit list", options, io) { admin throws(ServiceError) -> Int32 in
            var printed = 0
            if json { io.standardOutput("[") }
            while true {
                if let most { query.limit = min(AuditQuery.maximumLimit, most - printed) }
                let page = try admin.auditPage(query)
                for row in page.entries {
                    if json {
                        io.standardOutput((printed == 0 ? "\n" : ",\n") + JSONText.render(value(row), pretty: true))
                    } else {
                        let entry = row.entry
                        io.standardOutput("\(entry.at)  \(entry.actor)  \(entry.action.rawValue)  \(entry.target)  \(entry.detail)\n")
                    }
                    printed += 1
                }
                guard let next = page.next else { break }
                if let most, printed >= most {
                    io.standardError("attestctl audit list: more actions are older; list them with --before \(next)\n")
                    break
                }
                query.before = next
            }
            if json { io.standardOutput(printed == 0 ? "]\n" : "\n]\n") }
            return ExitCode.success
        }
    }
}
