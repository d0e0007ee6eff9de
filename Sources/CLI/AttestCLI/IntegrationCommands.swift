import AttestCore
import AttestCrypto
import AttestObservability
import AttestOptions
import AttestService
import AttestStorage
import Foundation

/// `attestctl integration create|revoke|list|show`: administration over the same SQLite
/// database the server uses (safe concurrently: every write is a BEGIN IMMEDIATE transaction).
enum IntegrationCommands {
    static let workspace = OptionSpec(
        "workspace", value: "W", help: "workspace ID the tokens are scoped to (1-64 of A-Z a-z 0-9 _ -)", required: true)
    static let name = OptionSpec("name", value: "N", help: "a name for people", required: true)
    static let teamID = OptionSpec("team-id", value: "T", help: "Apple Developer Team ID (10 of A-Z 0-9)", required: true)
    static let bundleID = OptionSpec("bundle-id", value: "B", help: "bundle ID; repeat for up to 32", required: true, repeatable: true)
    static let environment = OptionSpec(
        "environment", value: "production|development|both",
        help: "App Attest environments accepted (default: production; development keys come from Xcode builds, opt in explicitly)")
    static let yes = OptionSpec(flag: "yes", help: "do not ask for confirmation")
    static let requireValidReceipt = OptionSpec(
        flag: "require-valid-receipt", help: "refuse attestations whose Apple receipt does not verify (default: store the verdict only)")
    static let maxRiskMetric = OptionSpec(
        "max-risk-metric", value: "N", help: "refuse refreshes while the device's fraud-risk metric exceeds N (default: no limit)")
    static let maxNewKeys = OptionSpec(
        "max-new-keys-per-hour", value: "N", help: "refuse new keys past N in the last hour (default: no limit)")
    static let maxLiveTokens = OptionSpec(
        "max-live-tokens-per-device", value: "N",
        help: "a refresh keeps only the device's newest N tokens (default: no limit; eager clients may hold several)")

    static let create = Command(
        path: ["integration", "create"],
        summary: "Register an app integration and print its client ID.",
        options: [
            workspace, name, teamID, bundleID, environment, maxLiveTokens, requireValidReceipt, maxRiskMetric, maxNewKeys,
            StoreOptions.database, StoreOptions.actor,
            StoreOptions.json,
        ],
        run: runCreate)

    static let revoke = Command(
        path: ["integration", "revoke"],
        summary: "Revoke an integration permanently: its tokens stop working at once, its devices are blocked.",
        options: [yes, StoreOptions.database, StoreOptions.actor, StoreOptions.json],
        positionals: ["CLIENT_ID"],
        run: runRevoke)

    static let suspend = Command(
        path: ["integration", "suspend"],
        summary: "Pause an integration while an incident is investigated: its tokens and devices are refused, nothing is deleted.",
        options: [StoreOptions.database, StoreOptions.actor], positionals: ["CLIENT_ID"],
        run: { options, io throws(UsageError) in runSuspend(options, io, true) })

    static let resume = Command(
        path: ["integration", "resume"], summary: "Resume a suspended integration: the same tokens and devices work again.",
        options: [StoreOptions.database, StoreOptions.actor], positionals: ["CLIENT_ID"],
        run: { options, io throws(UsageError) in runSuspend(options, io, false) })

    static let list = Command(
        path: ["integration", "list"], summary: "List integrations.",
        options: [StoreOptions.database, StoreOptions.actor, StoreOptions.json], run: runList)

    static let show = Command(
        path: ["integration", "show"], summary: "Show one integration.",
        options: [StoreOptions.database, StoreOptions.actor, StoreOptions.json], positionals: ["CLIENT_ID"],
        run: runShow)

    static func runCreate(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let environments: Set<AppAttestEnvironment>
        // Why production by default: development keys come from any developer-signed build, which
        // is not the app the integration's customer ships; accepting them is an explicit, logged choice.
        environments =
            try options.choice(
                environment, among: ["production": [.production], "development": [.development], "both": [.production, .development]])
            ?? [.production]
        let limit = try options.integer(maxLiveTokens, in: 1...1000)
        let policy = IntegrationPolicy(
            requireValidReceipt: options.flag(requireValidReceipt),
            maxRiskMetric: try options.integer(maxRiskMetric, in: 0...1_000_000),
            maxNewKeysPerHour: try options.integer(maxNewKeys, in: 1...1_000_000))
        guard let store = StoreOptions.openStore(options, io) else { return ExitCode.failure }
        let admin = StoreOptions.admin(store, io, options)
        do {
            let record = try admin.create(
                workspaceID: options.required(workspace), name: options.required(name), teamID: options.required(teamID),
                bundleIDs: options.values(bundleID), environments: environments, maxLiveTokensPerDevice: limit, policy: policy)
            io.standardOutput(options.flag(StoreOptions.json) ? IntegrationJSON.encode(record) : record.clientID + "\n")
            return ExitCode.success
        } catch  where error.code == .invalidIntegration {
            throw UsageError(message: "\(error.subcode.identifier): \(error.reason)")
        } catch {
            io.standardError("attestctl integration create: \(error.reason)\n")
            return ExitCode.failure
        }
    }

    static func runRevoke(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let clientID = options.positionals[0]
        return StoreOptions.administering("integration revoke", options, io) { admin throws(ServiceError) -> Int32 in
            guard let record = try admin.show(clientID: clientID) else {
                io.standardError("attestctl integration revoke: no integration \(clientID)\n")
                return ExitCode.failure
            }
            if !options.flag(yes) && record.status == .active {
                io.standardError(
                    "Revoke \(clientID) (\(record.name), workspace \(record.workspaceID)) permanently? Its tokens stop working at once, "
                        + "its devices can never get new ones, and the client ID is never reused. Type 'yes' to confirm: ")
                guard io.readLine()?.trimmingCharacters(in: .whitespaces) == "yes" else {
                    io.standardError("\nnot revoked\n")
                    return ExitCode.failure
                }
            }
            guard let summary = try admin.revoke(clientID: clientID) else { return ExitCode.failure }
            if options.flag(StoreOptions.json) {
                io.standardOutput(
                    IntegrationJSON.encode(
                        .object([
                            ("already_revoked", !summary.changed), ("client_id", clientID), ("devices_blocked", summary.devicesBlocked),
                            ("revoked", true), ("tokens_revoked", summary.tokensRevoked),
                        ])))
            } else if summary.changed {
                io.standardOutput(
                    "revoked \(clientID): \(summary.tokensRevoked) tokens revoked, \(summary.devicesBlocked) devices blocked\n")
            } else {
                io.standardOutput("\(clientID) was already revoked; nothing changed\n")
            }
            return ExitCode.success
        }
    }

    static func runSuspend(_ options: ParsedOptions, _ io: ToolIO, _ suspend: Bool) -> Int32 {
        let clientID = options.positionals[0]
        let verb = suspend ? "suspend" : "resume"
        return StoreOptions.administering("integration \(verb)", options, io) { admin throws(ServiceError) -> Int32 in
            switch try admin.setSuspended(clientID: clientID, suspend) {
            case nil:
                io.standardError("attestctl integration \(verb): no integration \(clientID)\n")
                return ExitCode.failure
            case false?:
                io.standardError("attestctl integration \(verb): \(clientID) is revoked, permanently\n")
                return ExitCode.failure
            case true?:
                io.standardOutput(
                    suspend ? "suspended \(clientID): its tokens and devices are refused until resumed\n" : "resumed \(clientID)\n")
                return ExitCode.success
            }
        }
    }

    static func runList(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        return StoreOptions.administering("integration list", options, io) { admin throws(ServiceError) -> Int32 in
            let records = try admin.list()
            if options.flag(StoreOptions.json) {
                io.standardOutput(IntegrationJSON.encode(.array(records.map(IntegrationJSON.value))))
            } else {
                for record in records {
                    io.standardOutput(
                        "\(record.clientID)  \(record.condition)  \(record.workspaceID)  \(record.teamID)  \(record.name)\n")
                }
            }
            return ExitCode.success
        }
    }

    static func runShow(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        return StoreOptions.administering("integration show", options, io) { admin throws(ServiceError) -> Int32 in
            guard let record = try admin.show(clientID: options.positionals[0]) else {
                io.standardError("attestctl integration show: no integration \(options.positionals[0])\n")
                return ExitCode.failure
            }
            let fraudKeyID = try admin.fraudKeyID(clientID: record.clientID)
            let debugTokens = try admin.liveDebugTokens(clientID: record.clientID)
            if options.flag(StoreOptions.json) {
                guard case .object(let members) = IntegrationJSON.value(record) else { return ExitCode.failure }
                let fraudKey = JSONValue.Member("fraud_key_id", fraudKeyID.map(JSONValue.string) ?? .null)
                let live = JSONValue.Member("live_debug_tokens", .integer(Int64(debugTokens)))
                io.standardOutput(IntegrationJSON.encode(.object((members + [fraudKey, live]).sorted { $0.key < $1.key })))
            } else {
                let since = record.revokedAt ?? record.suspendedAt
                io.standardOutput(
                    """
                    client_id:    \(record.clientID)
                    status:       \(record.condition)\(since.map { " (since \($0))" } ?? "")
                    fraud_key:    \(fraudKeyID.map { "\($0) (set: receipts are refreshed)" } ?? "none")
                    debug_tokens: \(debugTokens) live (attestctl debug-token list)
                    workspace:    \(record.workspaceID)
                    name:         \(record.name)
                    team_id:      \(record.teamID)
                    bundle_ids:   \(record.bundleIDs.joined(separator: ", "))
                    environments: \(record.environments.map(\.rawValue).joined(separator: ", "))
                    created_at:   \(record.createdAt)

                    """)
            }
            return ExitCode.success
        }
    }
}

/// The JSON shape of an integration in `attestctl --json` output (keys sorted).
enum IntegrationJSON {
    static func value(_ record: IntegrationRecord) -> JSONValue {
        .object([
            ("bundle_ids", record.bundleIDs), ("client_id", record.clientID), ("created_at", record.createdAt),
            ("environments", record.environments.map(\.rawValue)), ("max_live_tokens_per_device", record.maxLiveTokensPerDevice),
            ("max_new_keys_per_hour", record.policy.maxNewKeysPerHour), ("max_risk_metric", record.policy.maxRiskMetric),
            ("name", record.name),
            ("require_valid_receipt", record.policy.requireValidReceipt),
            ("revoked_at", record.revokedAt), ("status", record.condition), ("suspended_at", record.suspendedAt),
            ("team_id", record.teamID), ("workspace_id", record.workspaceID),
        ])
    }

    static func encode(_ record: IntegrationRecord) -> String { encode(value(record)) }

    static func encode(_ value: JSONValue) -> String { JSONText.render(value, pretty: true) + "\n" }
}
