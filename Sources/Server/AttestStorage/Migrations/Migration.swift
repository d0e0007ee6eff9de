/// One schema change: an id that orders it, a name for humans, and the SQL script it runs.
///
/// Immutable once shipped: a database records the ids it has applied, and a binary refuses to
/// run against one that has applied an id it does not know, except the one next after its own.
///
/// The compatibility rule (docs/OPERATIONS.md, upgrades): every migration is expand-only (it
/// adds tables, or columns that are nullable or have a default; it never drops, renames or
/// tightens), and every statement names its columns, so the binaries of version N keep working on
/// the schema of N+1 while a fleet upgrades: old nodes, and the attestctl of a host not yet
/// upgraded, run on the database the first new node migrated. What would break that (a drop, a
/// rename) ships one release later than the code that stopped using it.
package struct Migration: Sendable, Hashable {
    /// Position in the sequence; strictly increasing, starting at 1.
    package let id: Int
    /// A short snake_case name, the part after `NNNN_` in the file name.
    package let name: String
    /// The script, run with `execute` inside the migration's transaction.
    package let sql: String

    /// Makes a migration value.
    package init(id: Int, name: String, sql: String) { (self.id, self.name, self.sql) = (id, name, sql) }
}

/// Told of each migration applied, with how long it took (attestd logs it).
package typealias MigrationReport = @Sendable (Migration, Duration) -> Void

extension Migration {
    /// `NNNN_name`, as the file is named.
    package var fileName: String {
        let digits = String(id)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name
    }

    /// Refuses a schema that is not exactly `known`: newer (`migrationUnknown`: upgrade this
    /// program first) or older (`schemaBehind`: the new attestd migrates it when it starts, or
    /// `attestctl migrate`). For programs that must not migrate (attestctl).
    static func requireCurrent(recorded: [Int: String], known migrations: [Migration]) throws(StorageError) {
        do {
            try verify(recorded: recorded, known: migrations)
        } catch {
            throw .migrationUnknown(error.reason + "; upgrade attestctl to the version of attestd that migrated it")
        }
        let missing = migrations.filter { recorded[$0.id] == nil }
        guard missing.isEmpty else {
            let names = missing.map(\.fileName).joined(separator: ", ")
            throw .schemaBehind(
                "the database lacks migrations \(names) that this attestctl knows: start the new attestd first "
                    + "(it migrates at start), or run `attestctl migrate`")
        }
    }

    /// How many migrations past its own a binary runs on (the compatibility rule above).
    package static let compatibleAhead = 1

    /// Each release and the newest migration it ships, oldest first. A release adds at most
    /// `compatibleAhead` migrations, so that every binary of the release before runs on its schema
    /// while a fleet upgrades (and after a rollback); the tests hold the table to that, to the
    /// embedded migrations and to the version the binaries report.
    package static let releases: [(version: String, newestMigration: Int)] = [("0.2.0", 11), ("0.3.0", 12), ("0.4.0", 13)]

    /// Refuses a database that records a migration `known` lacks (a newer binary wrote it) beyond
    /// the next one, or records a known id under another name. `recorded` maps id to name.
    static func verify(recorded: [Int: String], known migrations: [Migration]) throws(StorageError) {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.id, $0.name) })
        let newest = migrations.map(\.id).max() ?? 0
        for (id, name) in recorded.sorted(by: { $0.key < $1.key }) {
            // The next migrations of a newer release: expand-only by rule, so this binary runs on them.
            if known[id] == nil, id > newest, id <= newest + compatibleAhead { continue }
            guard let knownName = known[id] else {
                throw .migrationUnknown(
                    "the database records migration \(id) '\(name)', which this binary does not know "
                        + "(a newer binary migrated it); refusing to use it")
            }
            guard knownName == name else {
                throw .migrationUnknown(
                    "the database records migration \(id) as '\(name)' but this binary calls it '\(knownName)'")
            }
        }
    }
}
