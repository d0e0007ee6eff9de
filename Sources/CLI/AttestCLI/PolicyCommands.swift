import AttestCrypto
import AttestOptions
import AttestService
import AttestStorage
import Foundation

/// `attestctl integration update`: the receipt and risk policy.
enum PolicyCommands {
    static let requireValidReceipt = OptionSpec(
        "require-valid-receipt", value: "yes|no", help: "refuse attestations whose Apple receipt does not verify")

    static let maxRiskMetric = OptionSpec(
        "max-risk-metric", value: "N|none", help: "refuse refreshes while a device's risk metric exceeds N")

    static let maxNewKeys = OptionSpec("max-new-keys-per-hour", value: "N|none", help: "refuse new keys past N in the last hour")
    static let maxLiveTokens = OptionSpec(
        "max-live-tokens-per-device", value: "N|none", help: "a refresh keeps only the device's newest N tokens")

    static let update = Command(
        path: ["integration", "update"],
        summary: "Change an integration's receipt and risk policy; options not given stay as they are.",
        options: [
            requireValidReceipt, maxRiskMetric, maxNewKeys, maxLiveTokens, StoreOptions.database, StoreOptions.actor,
            StoreOptions.json,
        ],
        positionals: ["CLIENT_ID"], run: runUpdate)

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
        guard let store = StoreOptions.openStore(options, io) else { return ExitCode.failure }
        let admin = StoreOptions.admin(store, io, options)
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
                options.flag(StoreOptions.json)
                    ? IntegrationJSON.encode(updated) : "updated \(client): \(IntegrationAdmin.describe(updated.policy))\n")
            return ExitCode.success
        } catch {
            io.standardError("attestctl integration update: \(error.reason)\n")
            return ExitCode.failure
        }
    }
}
