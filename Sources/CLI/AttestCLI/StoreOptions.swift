import AttestObservability
import AttestOptions
import AttestService
import AttestStorage
import Foundation

/// The options every command over the database shares (`--db`, `--actor`, `--json`), and how
/// they open the store and name the person who acts.
enum StoreOptions {
    static let database = OptionSpec(
        "db", value: "PATH|URI", help: "SQLite database file or postgresql:// URI (default: $ATTESTD_DB, else ./attestd.sqlite)",
        environment: "ATTESTD_DB")
    static let json = OptionSpec(flag: "json", help: "print JSON instead of text")
    static let actor = OptionSpec(
        "actor", value: "NAME", help: "who acts, for the audit log (default: $SUDO_USER, else $USER)")

    /// Opens the database the command names: it must exist with exactly this attestctl's schema.
    /// attestctl never creates or migrates a database on its own (only attestd, or `attestctl migrate`):
    /// a mistyped path is refused, and a new attestctl cannot migrate a live database under an old attestd.
    static func openStore(_ options: ParsedOptions, _ io: ToolIO) -> (any TokenStore)? {
        let value = options.value(database) ?? "attestd.sqlite"
        do {
            return try TokenStores.openExisting(StoreLocation(value), busyTimeout: .milliseconds(5000))
        } catch {
            let shown = (try? StoreLocation(value).redacted) ?? value
            io.standardError("attestctl: cannot use the database \(shown): \(error.reason)\n")
            return nil
        }
    }

    /// Opens the database, runs `body` with the administrator's use cases, and reports a service
    /// failure as `attestctl COMMAND: reason` with exit 1.
    static func administering(
        _ command: String, _ options: ParsedOptions, _ io: ToolIO, _ body: (IntegrationAdmin) throws(ServiceError) -> Int32
    ) -> Int32 {
        guard let store = openStore(options, io) else { return ExitCode.failure }
        do {
            return try body(admin(store, io, options))
        } catch {
            io.standardError("attestctl \(command): \(error.reason)\n")
            return ExitCode.failure
        }
    }

    /// The person behind an action: `--actor`, else the user who ran sudo, else the user.
    static func actorName(_ options: ParsedOptions, _ io: ToolIO) -> String {
        options.value(actor) ?? io.environment["SUDO_USER"].flatMap { $0.isEmpty ? nil : $0 } ?? io.environment["USER"] ?? "unknown"
    }

    /// Administrative actions are logged as JSON lines on stderr and recorded in the audit log,
    /// with the person behind them.
    static func admin(_ store: any TokenStore, _ io: ToolIO, _ options: ParsedOptions) -> IntegrationAdmin {
        let person = actorName(options, io)
        return IntegrationAdmin(
            store: store, clock: Clock(io: io),
            logger: Logger(
                sink: ClosureSink(write: { line in io.standardError(line + "\n") }), fields: ["actor": person, "tool": "attestctl"]),
            actor: person + " (attestctl)")
    }

    struct Clock: WallClock {
        let io: ToolIO
        func now() -> Int64 { io.now() }
    }
}
