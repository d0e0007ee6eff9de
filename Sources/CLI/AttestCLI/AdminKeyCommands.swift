import AttestCrypto
import AttestObservability
import AttestOptions
import AttestService
import AttestStorage

/// `attestctl admin-key create|list|disable|enable|revoke`: the keys of workspace admins (the admin API and the
/// console). A key's secret is printed once, by `create`; the database holds only its SHA-256.
enum AdminKeyCommands {
    static let workspace = OptionSpec(
        "workspace", value: "W", help: "the workspace the key administers (1-64 of A-Z a-z 0-9 _ -)", required: true)
    static let workspaceFilter = OptionSpec("workspace", value: "W", help: "only this workspace's keys")
    static let role = OptionSpec(
        "role", value: "ROLE", help: "user, developer, admin, owner or primary_owner (changes need admin or above)", required: true)
    static let name = OptionSpec("name", value: "N", help: "who holds the key: the audit log's actor for its every use", required: true)
    static let expiresIn = OptionSpec(
        "expires-in", value: "DURATION", help: "refuse the key after this long, such as 12h, 90d (1h to 730d; default: no expiry)")

    static let create = Command(
        path: ["admin-key", "create"],
        summary: "Create a workspace admin key and print it once (prefix adm_); only its hash is stored.",
        options: [workspace, role, name, expiresIn, StoreOptions.database, StoreOptions.actor, StoreOptions.json],
        run: runCreate)

    static let list = Command(
        path: ["admin-key", "list"],
        summary: "List admin keys: ID, name, workspace, role, status, expiry and last use (never the secret).",
        options: [workspaceFilter, StoreOptions.database, StoreOptions.actor, StoreOptions.json], run: runList)

    static let compromised = OptionSpec(
        flag: "compromised", help: "a leaked key: also revoke every key it created (and theirs), and list its changes to review")

    static let revoke = Command(
        path: ["admin-key", "revoke"], summary: "Revoke an admin key: its next request, and its console sessions, are refused.",
        options: [compromised, StoreOptions.database, StoreOptions.actor], positionals: ["KEY_ID"], run: runRevoke)

    static let disable = Command(
        path: ["admin-key", "disable"],
        summary: "Disable an admin key: refused, its console sessions ended, until `admin-key enable` (revoke is for good).",
        options: [StoreOptions.database, StoreOptions.actor], positionals: ["KEY_ID"]
    ) { options, io throws(UsageError) in runSetDisabled(options, io, true) }

    static let enable = Command(
        path: ["admin-key", "enable"], summary: "Enable a disabled admin key again (not a revoked or expired one).",
        options: [StoreOptions.database, StoreOptions.actor], positionals: ["KEY_ID"]
    ) { options, io throws(UsageError) in runSetDisabled(options, io, false) }

    static func workspaceAdmin(_ store: any TokenStore, _ io: ToolIO, _ options: ParsedOptions) -> WorkspaceAdmin {
        let person = StoreOptions.actorName(options, io)
        return WorkspaceAdmin(
            store: store, clock: StoreOptions.Clock(io: io),
            logger: Logger(
                sink: ClosureSink(write: { line in io.standardError(line + "\n") }), fields: ["actor": person, "tool": "attestctl"]))
    }

    static func runCreate(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        guard let role = AdminRole(rawValue: options.required(role)) else {
            throw UsageError(message: "--role takes user, developer, admin, owner or primary_owner, not '\(options.required(role))'")
        }
        var lifetime: Int64?
        if let text = options.value(expiresIn) {
            guard let seconds = DebugTokenCommands.seconds(text), WorkspaceAdmin.keyLifetimes.contains(seconds) else {
                throw UsageError(message: "--expires-in takes a duration from 1h to 730d, such as 12h or 90d")
            }
            lifetime = seconds
        }
        guard let store = StoreOptions.openStore(options, io) else { return ExitCode.failure }
        do {
            let issued = try workspaceAdmin(store, io, options).issueKey(
                workspaceID: options.required(workspace), role: role, name: options.required(name), expiresIn: lifetime,
                actor: StoreOptions.actorName(options, io) + " (attestctl)")
            if options.flag(StoreOptions.json) {
                var members = members(issued.record, at: issued.record.createdAt)
                members.insert(("key", issued.secret), at: 2)
                io.standardOutput(JSONText.render(JSONValue.object(members), pretty: true) + "\n")
            } else {
                io.standardOutput(issued.secret + "\n")
                io.standardError("created admin key \(issued.record.id); the key above is shown only now\n")
            }
            return ExitCode.success
        } catch  where error.code == .invalidIntegration || error.code == .malformedRequest {
            throw UsageError(message: error.reason)
        } catch {
            io.standardError("attestctl admin-key create: \(error.reason)\n")
            return ExitCode.failure
        }
    }

    /// A key's JSON members (keys sorted); never its secret nor its hash.
    static func members(_ key: AdminKeyRecord, at time: Int64) -> [(String, any Sendable)] {
        [
            ("created_at", key.createdAt), ("disabled_at", key.disabledAt), ("expires_at", key.expiresAt), ("id", key.id),
            ("last_used_at", key.lastUsedAt), ("name", key.name), ("revoked_at", key.revokedAt), ("role", key.role.rawValue),
            ("status", key.status(at: time).rawValue), ("workspace_id", key.workspaceID),
        ]
    }

    static func runList(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        guard let store = StoreOptions.openStore(options, io) else { return ExitCode.failure }
        do {
            let admin = workspaceAdmin(store, io, options)
            let keys = try admin.keys(workspaceID: options.value(workspaceFilter))
            let now = admin.clock.now()
            if options.flag(StoreOptions.json) {
                io.standardOutput(JSONText.render(.array(keys.map { JSONValue.object(members($0, at: now)) }), pretty: true) + "\n")
            } else {
                for key in keys {
                    let expiry = key.expiresAt.map { "expires \(UTCTimestamp.format(Int($0)))" } ?? "no expiry"
                    let used = key.lastUsedAt.map { "last used \(UTCTimestamp.format(Int($0)))" } ?? "never used"
                    io.standardOutput(
                        "\(key.id)  \(key.name)  \(key.workspaceID)  \(key.role.rawValue)  \(key.status(at: now).rawValue)  \(expiry)  \(used)\n"
                    )
                }
            }
            return ExitCode.success
        } catch {
            io.standardError("attestctl admin-key list: \(error.reason)\n")
            return ExitCode.failure
        }
    }

    static func runRevoke(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let id = options.positionals[0]
        guard let store = StoreOptions.openStore(options, io) else { return ExitCode.failure }
        if options.flag(compromised) { return runRevokeCompromised(id, store, options, io) }
        do {
            switch try workspaceAdmin(store, io, options).revokeKey(
                id: id, actor: StoreOptions.actorName(options, io) + " (attestctl)")
            {
            case nil:
                io.standardError("attestctl admin-key revoke: no admin key \(id)\n")
                return ExitCode.failure
            case false?:
                io.standardOutput("\(id) was already revoked; nothing changed\n")
            case true?:
                io.standardOutput("revoked admin key \(id): its next request and its console sessions are refused\n")
            }
            return ExitCode.success
        } catch {
            io.standardError("attestctl admin-key revoke: \(error.reason)\n")
            return ExitCode.failure
        }
    }

    /// `disable` (`disabled` true) or `enable`.
    static func runSetDisabled(_ options: ParsedOptions, _ io: ToolIO, _ disabled: Bool) -> Int32 {
        let id = options.positionals[0]
        let verb = disabled ? "disable" : "enable"
        guard let store = StoreOptions.openStore(options, io) else { return ExitCode.failure }
        do {
            switch try workspaceAdmin(store, io, options).setKeyDisabled(
                id: id, disabled, actor: StoreOptions.actorName(options, io) + " (attestctl)")
            {
            case nil:
                io.standardError("attestctl admin-key \(verb): no admin key \(id)\n")
                return ExitCode.failure
            case false?:
                io.standardOutput("\(id) is \(disabled ? "disabled already" : "not disabled") or revoked; nothing changed\n")
            case true?:
                io.standardOutput(
                    disabled
                        ? "disabled admin key \(id): its next request is refused and its console sessions ended\n"
                        : "enabled admin key \(id)\n")
            }
            return ExitCode.success
        } catch {
            io.standardError("attestctl admin-key \(verb): \(error.reason)\n")
            return ExitCode.failure
        }
    }

    /// `--compromised`: the key and the keys it created, revoked; then its changes, to review.
    static func runRevokeCompromised(_ id: String, _ store: any TokenStore, _ options: ParsedOptions, _ io: ToolIO) -> Int32 {
        do {
            let admin = workspaceAdmin(store, io, options)
            guard let report = try admin.revokeCompromised(id: id, actor: StoreOptions.actorName(options, io) + " (attestctl)") else {
                io.standardError("attestctl admin-key revoke: no admin key \(id)\n")
                return ExitCode.failure
            }
            for key in report.revoked { io.standardOutput("revoked \(key.id)  \(key.name)  \(key.role.rawValue)\n") }
            for key in report.alreadyRevoked { io.standardOutput("already revoked \(key.id)  \(key.name)\n") }
            io.standardOutput("\(report.changes.count) changes made with \(id), newest first (review each; undo what was not yours):\n")
            for row in report.changes {
                let entry = row.entry
                io.standardOutput("  \(entry.at)  \(entry.action.rawValue)  \(entry.target)  \(entry.detail)\n")
            }
            return ExitCode.success
        } catch {
            io.standardError("attestctl admin-key revoke: \(error.reason)\n")
            return ExitCode.failure
        }
    }
}
