import AttestCrypto
import AttestOptions
import AttestService
import AttestStorage
import Foundation
import Glibc

/// `attestctl migrate` and `attestctl store copy`: the only commands that change a schema.
enum StoreCommands {
    static let from = OptionSpec("from", value: "PATH|URI", help: "the database to copy from (a SQLite file, typically)", required: true)
    static let to = OptionSpec(
        "to", value: "URI|PATH", help: "the empty database to copy into (a postgresql:// URI, typically)", required: true)

    static let migrate = Command(
        path: ["migrate"],
        summary: "Apply this attestctl's migrations to an existing database (attestd also does it when it starts).",
        options: [StoreOptions.database, StoreOptions.json],
        run: runMigrate)

    static let check = Command(
        path: ["check"],
        summary:
            "Read the whole database for damage (SQLite's quick_check; attestd and attestctl only run a cheap check when they open it).",
        options: [StoreOptions.database], run: runCheck)

    static func runCheck(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        guard let store = StoreOptions.openStore(options, io) else { return ExitCode.failure }
        do {
            try store.checkIntegrity()
            io.standardOutput("ok\n")
            return ExitCode.success
        } catch {
            io.standardError("attestctl check: \(error.reason)\n")
            return ExitCode.failure
        }
    }

    static let backupFile = OptionSpec(
        "to", value: "FILE", help: "the backup file to write (a new SQLite database, mode 0600; it must not exist)", required: true)

    static let backup = Command(
        path: ["store", "backup"],
        summary: "Write a consistent copy of the live database to a new SQLite file, online, mode 0600 (restore with store copy).",
        options: [StoreOptions.database, backupFile, StoreOptions.actor, StoreOptions.json], run: runBackup)

    static func runBackup(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let path = options.required(backupFile)
        // Created here, exclusively and 0600, before anything is written into it: an existing file
        // is never overwritten, and the copy is never readable by others, whatever the umask.
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let failure = errno
            let directory = (path as NSString).deletingLastPathComponent
            let why =
                switch failure {
                case EEXIST: "it exists already: a backup never overwrites a file; choose a new name"
                case EACCES, EPERM, EROFS:
                    "this user (uid \(geteuid())) cannot write into \(directory.isEmpty ? "." : directory): "
                        + "back up into a directory it may write, or run attestctl as root"
                case ENOENT: "the directory \(directory) does not exist"
                default: String(cString: strerror(failure))
                }
            io.standardError("attestctl store backup: cannot create \(path): \(why)\n")
            return ExitCode.failure
        }
        close(descriptor)
        return StoreOptions.administering("store backup", options, io) { admin throws(ServiceError) -> Int32 in
            do throws(ServiceError) {
                try admin.backup(to: path)
            } catch {
                try? FileManager.default.removeItem(atPath: path)
                throw error
            }
            let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            if options.flag(StoreOptions.json) {
                io.standardOutput(JSONText.render(.object([("backup", path), ("bytes", bytes)]), pretty: true) + "\n")
            } else {
                io.standardOutput("backed up to \(path) (\(bytes) bytes, mode 0600)\n")
            }
            return ExitCode.success
        }
    }

    static let copy = Command(
        path: ["store", "copy"],
        summary:
            "Copy everything (integrations, devices, tokens, debug tokens, admin keys, audit) into an empty database, in one transaction; a SQLite file copied to PostgreSQL is marked moved.",
        options: [from, to, StoreOptions.actor, StoreOptions.json],
        run: runCopy)

    static func location(_ value: String, _ option: String) throws(UsageError) -> StoreLocation {
        guard let location = try? StoreLocation(value) else {
            throw UsageError(message: "--\(option) needs a file path or a postgresql:// URI")
        }
        return location
    }

    static func runMigrate(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let target = try location(options.value(StoreOptions.database) ?? "attestd.sqlite", "db")
        do {
            let (_, applied) = try TokenStores.migrate(target, create: false, busyTimeout: .milliseconds(5000), at: io.now())
            if options.flag(StoreOptions.json) {
                io.standardOutput(JSONText.render(.object([("applied", applied.map(\.fileName))]), pretty: true) + "\n")
            } else {
                io.standardOutput(
                    applied.isEmpty ? "\(target.redacted) is up to date\n" : applied.map { "applied \($0.fileName)\n" }.joined())
            }
            return ExitCode.success
        } catch {
            io.standardError("attestctl migrate: \(target.redacted): \(error.reason)\n")
            return ExitCode.failure
        }
    }

    static func runCopy(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let source = try location(options.required(from), "from")
        let target = try location(options.required(to), "to")
        guard source != target else { throw UsageError(message: "--from and --to name the same database") }
        do {
            // A moved file may be copied again (how it moved, and how to move it anew).
            let origin = try TokenStores.openExisting(source, busyTimeout: .milliseconds(5000), allowingMoved: true)
            // Every token, expired or not: this host's clock decides nothing here (one two hours fast
            // once copied none); attestd's purge deletes the expired ones on the target.
            let snapshot = try origin.snapshot(at: 0)
            // The target gets its schema here: copying into an empty database is how it is set up.
            let (destination, _) = try TokenStores.migrate(target, create: true, busyTimeout: .milliseconds(5000), at: io.now())
            try destination.restore(snapshot)
            let summary = CopySummary(snapshot)
            // A SQLite file whose data now live in PostgreSQL is marked moved: attestd and
            // attestctl refuse it, naming where it went, so a host that missed the new ATTESTD_DB
            // cannot serve the old file's tokens (revoked there since).
            var moved: SQLiteTokenStore?
            if case .postgresql = target, let file = origin as? SQLiteTokenStore { moved = file }
            try moved?.markMoved(
                to: target.redacted, by: StoreOptions.actorName(options, io) + " (attestctl)", at: io.now(), detail: summary.sentence)
            if options.flag(StoreOptions.json) {
                io.standardOutput(
                    JSONText.render(
                        .object(
                            summary.fields + [
                                ("from", source.redacted), ("to", target.redacted), ("source_marked_moved", moved != nil),
                            ]),
                        pretty: true) + "\n")
            } else {
                io.standardOutput(
                    "copied \(summary.sentence) from \(source.redacted) to \(target.redacted)\n"
                        + (moved == nil ? "" : "\(source.redacted) is marked moved: attestd and attestctl refuse it from now on\n"))
            }
            return ExitCode.success
        } catch {
            io.standardError("attestctl store copy: \(error.reason)\n")
            return ExitCode.failure
        }
    }
}

/// What `store copy` copied, counted from the snapshot it wrote.
struct CopySummary {
    let snapshot: StoreSnapshot

    init(_ snapshot: StoreSnapshot) { self.snapshot = snapshot }

    private var revoked: Int { snapshot.integrations.filter { $0.status == .revoked }.count }

    /// One sentence: every kind of row, revoked integrations apart.
    var sentence: String {
        "\(snapshot.integrations.count) integrations (\(revoked) revoked), \(snapshot.devices.count) devices, "
            + "\(snapshot.tokens.count) tokens, \(snapshot.debugTokens.count) debug tokens, \(snapshot.adminKeys.count) admin keys, "
            + "\(snapshot.auditEntries.count) audit entries and \(snapshot.verificationCounts.count) verification counts (per hour and outcome)"
    }

    /// The same counts as JSON fields.
    var fields: [(String, any Sendable)] {
        [
            ("admin_keys", snapshot.adminKeys.count), ("audit_entries", snapshot.auditEntries.count),
            ("debug_tokens", snapshot.debugTokens.count), ("devices", snapshot.devices.count),
            ("integrations", snapshot.integrations.count), ("revoked_integrations", revoked), ("tokens", snapshot.tokens.count),
            ("verification_counts", snapshot.verificationCounts.count),
        ]
    }
}
