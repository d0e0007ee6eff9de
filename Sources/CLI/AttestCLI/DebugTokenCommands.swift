import AttestCrypto
import AttestObservability
import AttestOptions
import AttestService
import AttestStorage

/// `attestctl debug-token create|list|revoke`: the debug tokens that let a build which cannot
/// attest (the iOS Simulator, previews, CI) get access tokens. The secret is printed once, by
/// `create`; the database holds only its SHA-256.
enum DebugTokenCommands {
    static let clientID = OptionSpec("client-id", value: "CLID", help: "the integration (clid_...)", required: true)
    static let name = OptionSpec("name", value: "N", help: "what the token is for, e.g. 'CI' or 'Simulator, Alice'", required: true)
    static let expiresIn = OptionSpec(
        "expires-in", value: "DURATION", help: "lifetime such as 90m, 12h or 30d (default 30d, at most 90d)")

    static let create = Command(
        path: ["debug-token", "create"],
        summary: "Create a debug token for builds that cannot attest and print it once (prefix dbg_); only its hash is stored.",
        options: [clientID, name, expiresIn, StoreOptions.database, StoreOptions.actor, StoreOptions.json],
        run: runCreate)

    static let list = Command(
        path: ["debug-token", "list"], summary: "List an integration's debug tokens: expiry, last use, tokens minted (never the secret).",
        options: [clientID, StoreOptions.database, StoreOptions.actor, StoreOptions.json], run: runList)

    static let revoke = Command(
        path: ["debug-token", "revoke"],
        summary: "Revoke a debug token: every access token it minted is refused at once, on every node.",
        options: [IntegrationCommands.yes, StoreOptions.database, StoreOptions.actor], positionals: ["ID"],
        run: runRevoke)

    /// Seconds in `text`: a whole number followed by m, h or d.
    static func seconds(_ text: String) -> Int64? {
        guard let unit = text.last, let count = Int64(text.dropLast()), count > 0, count <= 1_000_000 else { return nil }
        switch unit {
        case "m": return count * 60
        case "h": return count * 3600
        case "d": return count * 86_400
        default: return nil
        }
    }

    static func runCreate(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        var lifetime: Int64?
        if let text = options.value(expiresIn) {
            guard let seconds = seconds(text) else { throw UsageError(message: "--expires-in takes a duration such as 90m, 12h or 30d") }
            guard seconds <= WorkspaceAdmin.debugTokenMaximumLifetime else {
                throw UsageError(message: "--expires-in is at most 90d: a debug token must expire")
            }
            lifetime = seconds
        }
        guard let store = StoreOptions.openStore(options, io) else { return ExitCode.failure }
        do {
            let issued = try AdminKeyCommands.workspaceAdmin(store, io, options).createDebugToken(
                clientID: options.required(clientID), name: options.required(name), lifetime: lifetime,
                actor: StoreOptions.actorName(options, io) + " (attestctl)")
            if options.flag(StoreOptions.json) {
                let members = issued.record.publicMembers + [("secret", issued.secret)]
                io.standardOutput(JSONText.render(JSONValue.object(members.sorted { $0.0 < $1.0 }), pretty: true) + "\n")
            } else {
                io.standardOutput(issued.secret + "\n")
                io.standardError(
                    "created debug token \(issued.record.id), expiring at \(issued.record.expiresAt) (Unix); the token above is shown only now\n"
                )
            }
            return ExitCode.success
        } catch  where error.code == .malformedRequest {
            throw UsageError(message: error.reason)
        } catch {
            io.standardError("attestctl debug-token create: \(error.reason)\n")
            return ExitCode.failure
        }
    }

    static func runList(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        guard let store = StoreOptions.openStore(options, io) else { return ExitCode.failure }
        do {
            let tokens = try AdminKeyCommands.workspaceAdmin(store, io, options).debugTokens(clientID: options.required(clientID))
            if options.flag(StoreOptions.json) {
                let list = JSONValue.array(tokens.map { JSONValue.object($0.publicMembers.sorted { $0.0 < $1.0 }) })
                io.standardOutput(JSONText.render(JSONValue.object([("debug_tokens", list)]), pretty: true) + "\n")
            } else {
                for token in tokens {
                    let status = token.revokedAt != nil ? "revoked" : "expires \(token.expiresAt)"
                    let used = token.lastUsedAt.map { "last used \($0)" } ?? "never used"
                    io.standardOutput("\(token.id)  \(token.name)  \(status)  \(used)  \(token.minted) minted\n")
                }
            }
            return ExitCode.success
        } catch {
            io.standardError("attestctl debug-token list: \(error.reason)\n")
            return ExitCode.failure
        }
    }

    static func runRevoke(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let id = options.positionals[0]
        guard let store = StoreOptions.openStore(options, io) else { return ExitCode.failure }
        if !options.flag(IntegrationCommands.yes) {
            io.standardError("Revoke debug token \(id)? Every access token it minted stops working at once. Type 'yes' to confirm: ")
            guard io.readLine()?.trimmingCharacters(in: .whitespaces) == "yes" else {
                io.standardError("\nnot revoked\n")
                return ExitCode.failure
            }
        }
        do {
            switch try AdminKeyCommands.workspaceAdmin(store, io, options).revokeDebugToken(
                id: id, actor: StoreOptions.actorName(options, io) + " (attestctl)")
            {
            case nil:
                io.standardError("attestctl debug-token revoke: no debug token \(id)\n")
                return ExitCode.failure
            case .alreadyRevoked?:
                io.standardOutput("\(id) was already revoked; nothing changed\n")
            case .revoked(let tokens)?:
                io.standardOutput("revoked debug token \(id): \(tokens) access tokens it minted revoked\n")
            }
            return ExitCode.success
        } catch {
            io.standardError("attestctl debug-token revoke: \(error.reason)\n")
            return ExitCode.failure
        }
    }
}
