/// Each integration's verifications per hour (`verification_counts`), written once for both
/// dialects: added to by every node's flush, read summed into buckets, purged after 31 days.
extension SQLTokenStore {
    package func addVerificationCounts(_ counts: [VerificationCount]) throws(StorageError) {
        guard !counts.isEmpty else { return }
        // Why not durable: a count lost to a power cut costs a bar of a chart, and the flush runs
        // beside the requests' commits.
        try perform(.transaction(durable: false)) { session throws(StorageError) in
            for count in counts {
                try session.run(
                    VerificationCountSQL.add,
                    [.text(count.clientID), .integer(count.start), .text(count.kind.rawValue), .text(count.outcome), .integer(count.count)])
            }
        }
    }

    package func verificationCounts(clientID: String, since: Int64, bucket: Int64) throws(StorageError) -> [VerificationCount] {
        try perform(.read) { session throws(StorageError) -> [VerificationCount] in
            try session.rows(VerificationCountSQL.summed, [.integer(bucket), .text(clientID), .integer(since)]).map {
                row throws(StorageError) in
                guard let kind = VerificationCount.Kind(rawValue: try row.text(1)) else {
                    throw .corrupt("verification_counts holds an unknown kind")
                }
                return VerificationCount(
                    clientID: clientID, start: try row.int64(0), kind: kind, outcome: try row.text(2), count: try row.int64(3))
            }
        }
    }
}

/// The statements of `verification_counts`.
enum VerificationCountSQL {
    static let add = SQLStatement(
        """
        INSERT INTO verification_counts (client_id, hour, kind, outcome, count) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (client_id, hour, kind, outcome) DO UPDATE SET count = verification_counts.count + excluded.count
        """)
    /// `?1`-second buckets (3600 or 86400) of one integration from `?3` on, oldest first.
    static let summed = SQLStatement(
        """
        SELECT (hour / ?1) * ?1 AS bucket, kind, outcome, CAST(sum(count) AS BIGINT) FROM verification_counts
        WHERE client_id = ?2 AND hour >= ?3 GROUP BY bucket, kind, outcome ORDER BY bucket, kind, outcome
        """)
    /// Every row, for `store copy`.
    static let all = SQLStatement(
        "SELECT \(SQLText.list(VerificationCount.columns)) FROM verification_counts ORDER BY client_id, hour, kind, outcome")
    /// Rows past the retention (`VerificationCount.retention`).
    static let purge = SQLStatement("DELETE FROM verification_counts WHERE hour < ?")
}
