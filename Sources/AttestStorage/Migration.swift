/// One schema change: an id that orders it, a name for humans, and the SQL script it runs.
///
/// Immutable once shipped: a database records the ids it has applied, and a binary refuses to
/// run against one that has applied an id it does not know.
package struct Migration: Sendable, Hashable {
    /// Position in the sequence; strictly increasing, starting at 1.
    package let id: Int
    /// A short snake_case name, the part after `NNNN_` in the file name.
    package let name: String
    /// The script, run with `execute` inside the migration's transaction.
    package let sql: String

    /// Makes a migration value.
    package init(id: Int, name: String, sql: String) {
        self.id = id
        self.name = name
        self.sql = sql
    }
}

extension Migration {
    /// Refuses a database that records a migration `known` lacks (a newer binary wrote it) or
    /// records a known id under another name. `recorded` maps id to name.
    static func verify(recorded: [Int: String], known migrations: [Migration]) throws(StorageError) {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.id, $0.name) })
        for (id, name) in recorded.sorted(by: { $0.key < $1.key }) {
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
