import AttestCrypto
import AttestOptions
import AttestService
import AttestStorage
import Foundation

/// `attestctl integration update` (the receipt and risk policy) and `attestctl device list|show`.
enum PolicyCommands {
    static let requireValidReceipt = OptionSpec(
        "require-valid-receipt", value: "yes|no", help: "refuse attestations whose Apple receipt does not verify")
    static let maxRiskMetric = OptionSpec(
        "max-risk-metric", value: "N|none", help: "refuse refreshes while a device's risk metric exceeds N")
    static let maxNewKeys = OptionSpec("max-new-keys-per-hour", value: "N|none", help: "refuse new keys past N in the last hour")
    static let maxLiveTokens = OptionSpec(
        "max-live-tokens-per-device", value: "N|none", help: "a refresh keeps only the device's newest N tokens")
    static let clientID = OptionSpec("client-id", value: "CLID", help: "the integration whose devices to list", required: true)

    static let update = Command(
        path: ["integration", "update"],
        summary: "Change an integration's receipt and risk policy; options not given stay as they are.",
        options: [
            requireValidReceipt, maxRiskMetric, maxNewKeys, maxLiveTokens, IntegrationCommands.database, IntegrationCommands.actor,
            IntegrationCommands.json,
        ],
        positionals: ["CLIENT_ID"], run: runUpdate)

    static let list = Command(
        path: ["device", "list"],
        summary: "List an integration's devices: status, counter, environment, receipt, risk metric, live tokens.",
        options: [clientID, IntegrationCommands.database, IntegrationCommands.actor, IntegrationCommands.json], run: runList)

    static let show = Command(
        path: ["device", "show"], summary: "Show one device (KEY_ID as standard base64 or 64 hex digits).",
        options: [IntegrationCommands.database, IntegrationCommands.actor, IntegrationCommands.json], positionals: ["KEY_ID"], run: runShow)

    /// `N|none` for an optional limit: nil when not given (keep), `.some(nil)` for none.
    static func limit(_ options: ParsedOptions, _ spec: OptionSpec, in range: ClosedRange<Int>) throws(UsageError) -> Int?? {
        guard let text = options.value(spec) else { return nil }
        if text == "none" { return .some(nil) }
        return .some(try spec.integer(text, in: range))
    }

    static func runUpdate(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let client = options.positionals[0]
        let require = try options.choice(requireValidReceipt, among: ["yes": true, "no": false])
        let risk = try limit(options, maxRiskMetric, in: 0...1_000_000)
        let keys = try limit(options, maxNewKeys, in: 1...1_000_000)
        let tokens = try limit(options, maxLiveTokens, in: 1...1000)
        guard require != nil || risk != nil || keys != nil || tokens != nil else {
            throw UsageError(message: "give at least one setting to change")
        }
        guard let store = IntegrationCommands.openStore(options, io) else { return ExitCode.failure }
        let admin = IntegrationCommands.admin(store, io, options)
        do {
            guard let current = try admin.show(clientID: client) else {
                io.standardError("attestctl integration update: no integration \(client)\n")
                return ExitCode.failure
            }
            let policy = IntegrationPolicy(
                requireValidReceipt: require ?? current.policy.requireValidReceipt, maxRiskMetric: risk ?? current.policy.maxRiskMetric,
                maxNewKeysPerHour: keys ?? current.policy.maxNewKeysPerHour)
            guard
                let updated = try admin.update(
                    clientID: client, policy: policy, maxLiveTokensPerDevice: tokens ?? current.maxLiveTokensPerDevice)
            else { return ExitCode.failure }
            io.standardOutput(
                options.flag(IntegrationCommands.json)
                    ? IntegrationJSON.encode(updated) : "updated \(client): \(IntegrationAdmin.describe(updated.policy))\n")
            return ExitCode.success
        } catch {
            io.standardError("attestctl integration update: \(error.reason)\n")
            return ExitCode.failure
        }
    }

    static func value(_ summary: DeviceSummary) -> JSONValue {
        let device = summary.device
        let receipt: JSONValue =
            device.receiptState.map { state in
                .object([
                    ("created_at", state.createdAt), ("expires_at", state.expiresAt), ("refreshed_at", state.refreshedAt),
                    ("risk_metric", state.riskMetric), ("type", state.type?.rawValue), ("verdict", state.verdict.description),
                ])
            } ?? .null
        return .object([
            ("app_id", device.appID), ("client_id", device.clientID), ("counter", device.counter), ("created_at", device.createdAt),
            ("environment", device.environment.rawValue), ("key_id", Base64Text.encode(device.keyID, .standard)),
            ("key_id_hex", Hex.encode(device.keyID)),
            ("live_tokens", summary.liveTokens), ("receipt", receipt), ("status", device.status.rawValue),
        ])
    }

    static func line(_ summary: DeviceSummary) -> String {
        let device = summary.device
        let receipt =
            device.receiptState.map { "\($0.verdict) \($0.type?.rawValue ?? "-") risk=\($0.riskMetric.map(String.init) ?? "-")" }
            ?? "unchecked"
        return
            "\(Base64Text.encode(device.keyID, .standard))  \(device.status.rawValue)  counter=\(device.counter)  \(device.environment.rawValue)  "
            + "receipt=\(receipt)  tokens=\(summary.liveTokens)\n"
    }

    static func runList(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        return IntegrationCommands.administering("device list", options, io) { admin throws(ServiceError) -> Int32 in
            let devices = try admin.devices(clientID: options.required(clientID))
            if options.flag(IntegrationCommands.json) {
                io.standardOutput(JSONText.render(.array(devices.map(value)), pretty: true) + "\n")
            } else {
                for device in devices { io.standardOutput(line(device)) }
            }
            return ExitCode.success
        }
    }

    static func runShow(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let text = options.positionals[0]
        let keyID = try IncidentCommands.keyID(text)
        return IntegrationCommands.administering("device show", options, io) { admin throws(ServiceError) -> Int32 in
            guard let device = try admin.device(keyID: keyID) else {
                io.standardError("attestctl device show: no device \(text)\n")
                return ExitCode.failure
            }
            io.standardOutput(
                options.flag(IntegrationCommands.json) ? JSONText.render(value(device), pretty: true) + "\n" : line(device))
            return ExitCode.success
        }
    }
}
