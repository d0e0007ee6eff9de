import Foundation

/// The mark `attestctl store copy` leaves on a SQLite file it moved to PostgreSQL, so that the
/// file cannot come back: a node that misses the drop-in naming PostgreSQL would otherwise start
/// on it and answer 200 for every token revoked since the move.
///
/// Two parts, written in one transaction: the header's application ID (free to read at every
/// open: `PRAGMA application_id`, 0 in every file attestd made before) and an audit row
/// `store.move` whose target is where the data went (its password left out).
extension SQLiteDatabase {
    /// "MOVD": the application ID of a moved file.
    static let movedApplicationID: Int64 = 0x4D4F_5644

    /// Where the file went and when, if `store copy` moved it; nil for a file in use.
    func movedTo() throws(StorageError) -> (target: String, at: Int64)? {
        let mark = try prepare("PRAGMA application_id")
        guard try mark.step(), mark.int64(at: 0) == Self.movedApplicationID else { return nil }
        let row = try prepare("SELECT target, at FROM audit_log WHERE action = 'store.move' ORDER BY id DESC LIMIT 1")
        guard try row.step() else { return ("another database (no audit row says which)", 0) }
        return (row.string(at: 0) ?? "", row.int64(at: 1))
    }

    /// Throws `moved`, naming where the data went, when `store copy` moved this file.
    func refuseIfMoved(_ path: String) throws(StorageError) {
        guard let moved = try movedTo() else { return }
        let when = Date(timeIntervalSince1970: TimeInterval(moved.at)).formatted(.iso8601)
        throw .moved(
            "\(path) was moved to \(moved.target) by attestctl store copy at \(when): use that database (--db or ATTESTD_DB), "
                + "not this file, whose revocations stopped at the move")
    }

    /// Marks this file moved to `target` (shown without its password), audited as `actor` with
    /// `detail` (what was copied).
    func markMoved(to target: String, by actor: String, at time: Int64, detail: String) throws(StorageError) {
        do {
            try immediateTransaction {
                try execute(
                    "INSERT INTO audit_log (at, actor, action, target, detail) VALUES (?, ?, 'store.move', ?, ?)",
                    arguments: [.integer(time), .text(actor), .text(target), .text(detail)])
                try execute("PRAGMA application_id = \(Self.movedApplicationID)")
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw .statementFailed("marking the file moved failed: \(error)")
        }
    }
}
