package import AttestStorage
import Synchronization

/// Each integration's verifications, counted per hour in memory and added to the store at each
/// flush (the purge tick, and at a clean stop): what the console charts, without a write per
/// request and without a label per integration in `/metrics`. Every node adds its own counts,
/// so a fleet's sum is in the store.
///
/// Bounded: at most `maximumPending` distinct (integration, hour, kind, outcome) wait for a flush;
/// past it (a store that failed many flushes in a row) new ones are dropped and counted in
/// `dropped`.
package final class VerificationTally: ServiceObserver {
    private struct Key: Hashable {
        let clientID: String
        let hour: Int64
        let kind: VerificationCount.Kind
        let outcome: String
    }

    private let maximumPending: Int
    private let clock: any WallClock
    private let pending = Mutex<[Key: Int64]>([:])
    private let droppedCount = Atomic<Int>(0)

    /// A tally reading the hour from `clock`, holding at most `maximumPending` counts between flushes.
    package init(clock: any WallClock, maximumPending: Int = 50_000) { (self.clock, self.maximumPending) = (clock, maximumPending) }

    /// Counts dropped because `maximumPending` were waiting.
    package var dropped: Int { droppedCount.load(ordering: .relaxed) }

    package func verificationFinished(_ kind: VerificationKind, outcome: String, clientID: String?) {
        guard let clientID else { return }
        count(clientID, kind == .attestation ? .attestation : .assertion, outcome)
    }

    package func debugTokenExchanged(outcome: String, clientID: String?) {
        guard let clientID else { return }
        count(clientID, .debug, outcome)
    }

    package func receiptVerified(clientID: String, verdict: String, riskMetric: Int?) {}
    package func tokenIssued(debug: Bool) {}

    private func count(_ clientID: String, _ kind: VerificationCount.Kind, _ outcome: String) {
        let now = clock.now()
        let key = Key(clientID: clientID, hour: now - now % 3600, kind: kind, outcome: outcome)
        let kept = pending.withLock { counts -> Bool in
            guard counts[key] != nil || counts.count < maximumPending else { return false }
            counts[key, default: 0] += 1
            return true
        }
        if !kept { droppedCount.add(1, ordering: .relaxed) }
    }

    /// Adds what was counted since the last flush to `store`; on a failure the counts wait for
    /// the next flush (nothing is lost, nothing is added twice).
    package func flush(into store: any VerificationCountStore) throws(StorageError) {
        let taken = pending.withLock { counts -> [Key: Int64] in
            defer { counts = [:] }
            return counts
        }
        guard !taken.isEmpty else { return }
        do {
            try store.addVerificationCounts(
                taken.map {
                    VerificationCount(
                        clientID: $0.key.clientID, start: $0.key.hour, kind: $0.key.kind, outcome: $0.key.outcome, count: $0.value)
                })
        } catch {
            pending.withLock { counts in
                for (key, value) in taken { counts[key, default: 0] += value }
            }
            throw error
        }
    }
}
