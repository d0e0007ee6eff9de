package import AttestStorage

/// One integration's verifications over the last 24 hours (hourly) or 30 days (daily): the
/// console's chart and table.
package struct VerificationSeries: Sendable {
    /// The ranges offered, by their wire name.
    package enum Range: String, Sendable, CaseIterable {
        case day = "24h"
        case month = "30d"

        /// The bucket's length in seconds and how many buckets, the last holding now.
        var buckets: (seconds: Int64, count: Int64) { self == .day ? (3600, 24) : (86_400, 30) }
    }

    /// One hour or day (UTC), from `start`.
    package struct Bucket: Sendable, Equatable {
        package var start: Int64
        /// Attestations and assertions that verified.
        package var verified: Int64 = 0
        /// Refusals of any kind (an attestation, an assertion, a debug token's exchange).
        package var refused: Int64 = 0
        /// Access tokens minted: every verification that passed, and every debug token exchanged.
        package var tokens: Int64 = 0
        /// Refusals by the check or reason that refused them.
        package var refusals: [String: Int64] = [:]
    }

    package let range: Range
    package let bucketSeconds: Int64
    package let buckets: [Bucket]

    /// The range's refusals by reason, most first (ties by name).
    package var refusals: [(reason: String, count: Int64)] {
        var total: [String: Int64] = [:]
        for bucket in buckets { total.merge(bucket.refusals, uniquingKeysWith: +) }
        return total.map { ($0.key, $0.value) }.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }
    }

    /// The series of `counts` (summed per bucket by the store) over `range`, ending with the bucket
    /// that holds `now`; a bucket without counts is zero.
    package init(_ counts: [VerificationCount], range: Range, now: Int64) {
        let (seconds, count) = range.buckets
        let last = now - now % seconds
        let first = last - (count - 1) * seconds
        var buckets = (0..<count).map { Bucket(start: first + $0 * seconds) }
        for row in counts where row.start >= first && row.start <= last {
            let index = Int((row.start - first) / seconds)
            if row.outcome == "ok" {
                if row.kind != .debug { buckets[index].verified += row.count }
                buckets[index].tokens += row.count
            } else {
                buckets[index].refused += row.count
                buckets[index].refusals[row.outcome, default: 0] += row.count
            }
        }
        (self.range, bucketSeconds, self.buckets) = (range, seconds, buckets)
    }
}

extension WorkspaceAdmin {
    /// The integration's verifications over `range` (any role reads them).
    package func verifications(
        _ principal: AdminPrincipal, clientID: String, range: VerificationSeries.Range
    ) throws(ServiceError) -> VerificationSeries {
        try require(principal, Self.readRole, to: "read integrations")
        let integration = try owned(principal, clientID)
        let now = clock.now()
        let (seconds, count) = range.buckets
        let since = now - now % seconds - (count - 1) * seconds
        let counts = try stored { () throws(StorageError) in
            try store.verificationCounts(clientID: integration.clientID, since: since, bucket: seconds)
        }
        return VerificationSeries(counts, range: range, now: now)
    }
}
