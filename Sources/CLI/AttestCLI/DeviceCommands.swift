import AttestCrypto
import AttestOptions
import AttestService
import AttestStorage
import Foundation

/// `attestctl device list|show|block|unblock`: an integration's devices, and the levers for one.
enum DeviceCommands {
    static let clientID = OptionSpec("client-id", value: "CLID", help: "the integration whose devices to list", required: true)

    static let list = Command(
        path: ["device", "list"],
        summary: "List an integration's devices, newest first: status, counter, environment, receipt, risk metric, live tokens.",
        options: [clientID, StoreOptions.database, StoreOptions.actor, StoreOptions.json], run: runList)

    static let show = Command(
        path: ["device", "show"], summary: "Show one device (KEY_ID as standard base64 or 64 hex digits).",
        options: [StoreOptions.database, StoreOptions.actor, StoreOptions.json], positionals: ["KEY_ID"], run: runShow)

    static func receipt(_ state: ReceiptState?) -> JSONValue {
        state.map { state in
            .object([
                ("created_at", state.createdAt), ("expires_at", state.expiresAt), ("refreshed_at", state.refreshedAt),
                ("risk_metric", state.riskMetric), ("type", state.type?.rawValue), ("verdict", state.verdict.description),
            ])
        } ?? .null
    }

    static func receiptWords(_ state: ReceiptState?) -> String {
        state.map { "\($0.verdict) \($0.type?.rawValue ?? "-") risk=\($0.riskMetric.map(String.init) ?? "-")" } ?? "unchecked"
    }

    /// A listed device (a listing carries no receipt, public key or App ID: `device show` does).
    static func value(_ entry: DeviceListEntry, clientID: String) -> JSONValue {
        .object([
            ("client_id", clientID), ("counter", entry.counter), ("created_at", entry.createdAt),
            ("environment", entry.environment.rawValue), ("key_id", Base64Text.encode(entry.keyID, .standard)),
            ("key_id_hex", Hex.encode(entry.keyID)), ("live_tokens", entry.liveTokens), ("receipt", receipt(entry.receiptState)),
            ("status", entry.status.rawValue), ("updated_at", entry.updatedAt),
        ])
    }

    static func line(_ entry: DeviceListEntry) -> String {
        "\(Base64Text.encode(entry.keyID, .standard))  \(entry.status.rawValue)  counter=\(entry.counter)  \(entry.environment.rawValue)  "
            + "receipt=\(receiptWords(entry.receiptState))  tokens=\(entry.liveTokens)\n"
    }

    static func value(_ summary: DeviceSummary) -> JSONValue {
        let device = summary.device
        let receipt = receipt(device.receiptState)
        return .object([
            ("app_id", device.appID), ("client_id", device.clientID), ("counter", device.counter), ("created_at", device.createdAt),
            ("environment", device.environment.rawValue), ("key_id", Base64Text.encode(device.keyID, .standard)),
            ("key_id_hex", Hex.encode(device.keyID)),
            ("live_tokens", summary.liveTokens), ("receipt", receipt), ("status", device.status.rawValue),
        ])
    }

    static func line(_ summary: DeviceSummary) -> String {
        let device = summary.device
        return
            "\(Base64Text.encode(device.keyID, .standard))  \(device.status.rawValue)  counter=\(device.counter)  \(device.environment.rawValue)  "
            + "receipt=\(receiptWords(device.receiptState))  tokens=\(summary.liveTokens)\n"
    }

    /// Every device, a page at a time, each printed as it comes (a JSON array stays one array):
    /// attestctl never holds a large integration's list in memory, nor asks for it in one statement.
    static func runList(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        return StoreOptions.administering("device list", options, io) { admin throws(ServiceError) -> Int32 in
            let clientID = options.required(Self.clientID)
            let json = options.flag(StoreOptions.json)
            var query = DeviceQuery(limit: DeviceQuery.maximumLimit)
            var first = true
            if json { io.standardOutput("[") }
            while true {
                let page = try admin.devices(clientID: clientID, query: query)
                for entry in page.devices {
                    if json {
                        io.standardOutput((first ? "\n" : ",\n") + JSONText.render(value(entry, clientID: clientID), pretty: true))
                    } else {
                        io.standardOutput(line(entry))
                    }
                    first = false
                }
                guard let next = page.next else { break }
                query.after = next
            }
            if json { io.standardOutput(first ? "]\n" : "\n]\n") }
            return ExitCode.success
        }
    }

    static func runShow(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let text = options.positionals[0]
        let keyID = try Self.keyID(text)
        return StoreOptions.administering("device show", options, io) { admin throws(ServiceError) -> Int32 in
            guard let device = try admin.device(keyID: keyID) else {
                io.standardError("attestctl device show: no device \(text)\n")
                return ExitCode.failure
            }
            io.standardOutput(
                options.flag(StoreOptions.json) ? JSONText.render(value(device), pretty: true) + "\n" : line(device))
            return ExitCode.success
        }
    }

    static let block = Command(
        path: ["device", "block"],
        summary: "Block one device key (standard base64 or 64 hex digits): its tokens stop working at once, it can never refresh again.",
        options: [StoreOptions.database, StoreOptions.actor], positionals: ["KEY_ID"], run: runBlock)

    static let unblock = Command(
        path: ["device", "unblock"],
        summary:
            "Make a blocked device key active again (not a revoked integration's): it refreshes by assertion; its old tokens stay revoked.",
        options: [StoreOptions.database, StoreOptions.actor], positionals: ["KEY_ID"], run: runUnblock)

    /// A device's KEY_ID argument: the 32-byte key ID as 64 hex digits (as `device list` prints it) or
    /// standard base64 (as the app sends it). Shared by `device block` and `device show`.
    static func keyID(_ text: String) throws(UsageError) -> [UInt8] {
        guard let keyID = Hex.decode(text).flatMap({ $0.count == 32 ? $0 : nil }) ?? Base64Text.decode(text, .standard), keyID.count == 32
        else { throw UsageError(message: "KEY_ID takes the 32-byte key ID as standard base64 (as the app sends it) or 64 hex digits") }
        return keyID
    }

    static func runBlock(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let text = options.positionals[0]
        let keyID = try keyID(text)
        return StoreOptions.administering("device block", options, io) { admin throws(ServiceError) -> Int32 in
            guard let tokens = try admin.blockDevice(keyID: keyID) else {
                io.standardError("attestctl device block: no device \(text)\n")
                return ExitCode.failure
            }
            io.standardOutput("blocked device \(Hex.encode(keyID)): \(tokens) tokens revoked\n")
            return ExitCode.success
        }
    }

    static func runUnblock(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let text = options.positionals[0]
        let keyID = try keyID(text)
        return StoreOptions.administering("device unblock", options, io) { admin throws(ServiceError) -> Int32 in
            let outcome = try admin.unblockDevice(keyID: keyID)
            let hex = Hex.encode(keyID)
            switch outcome {
            case .unblocked, .notBlocked:
                io.standardOutput(
                    outcome == .unblocked
                        ? "unblocked device \(hex): it may refresh again\n" : "device \(hex) is not blocked: nothing changed\n")
                return ExitCode.success
            case .integrationRevoked, .notFound:
                let why =
                    outcome == .notFound ? "no device \(text)" : "device \(text) belongs to a revoked integration; its keys stay blocked"
                io.standardError("attestctl device unblock: \(why)\n")
                return ExitCode.failure
            }
        }
    }
}
