import AttestStorage
import Synchronization
import Testing

@testable import AttestService

/// The per-integration verification counts: counted per hour in memory, added to the store at a
/// flush (kept for the next one when it fails), bounded; and the series the console charts.
@Suite("Verification tally")
struct VerificationTallyTests {
    static let now: Int64 = 1_800_003_000

    /// A store of verification counts in memory, failing while `failing` is set.
    final class CountStore: VerificationCountStore {
        let added = Mutex<[VerificationCount]>([])
        let failing = Atomic<Bool>(false)

        func addVerificationCounts(_ counts: [VerificationCount]) throws(StorageError) {
            if failing.load(ordering: .relaxed) { throw .unavailable("the test's store is down") }
            added.withLock { $0 += counts }
        }

        func verificationCounts(clientID: String, since: Int64, bucket: Int64) throws(StorageError) -> [VerificationCount] { [] }

        /// The counts added so far, summed by (hour, kind, outcome) of `clientID`.
        func total(_ clientID: String) -> [String: Int64] {
            added.withLock { counts in
                var total: [String: Int64] = [:]
                for c in counts where c.clientID == clientID { total["\(c.start) \(c.kind.rawValue) \(c.outcome)", default: 0] += c.count }
                return total
            }
        }
    }

    @Test("counts per integration, hour, kind and outcome; names nothing it cannot attribute; a flush adds each count once")
    func countsAndFlushes() throws {
        let clock = SettableWallClock(Self.now)
        let tally = VerificationTally(clock: clock)
        let store = CountStore()
        let hour = Self.now - Self.now % 3600
        tally.verificationFinished(.attestation, outcome: "ok", clientID: "clid_a")
        tally.verificationFinished(.attestation, outcome: "ok", clientID: "clid_a")
        tally.verificationFinished(.assertion, outcome: "assertion_counter", clientID: "clid_a")
        tally.verificationFinished(.attestation, outcome: "attestation_nonce", clientID: nil)
        tally.debugTokenExchanged(outcome: "ok", clientID: "clid_a")
        tally.debugTokenExchanged(outcome: "debug_token", clientID: nil)
        clock.advance(3600)
        tally.verificationFinished(.assertion, outcome: "ok", clientID: "clid_b")
        try tally.flush(into: store)
        #expect(
            store.total("clid_a") == [
                "\(hour) attestation ok": 2, "\(hour) assertion assertion_counter": 1, "\(hour) debug ok": 1,
            ])
        #expect(store.total("clid_b") == ["\(hour + 3600) assertion ok": 1])
        try tally.flush(into: store)
        #expect(store.added.withLock { $0.count } == 4)
    }

    @Test("a failed flush keeps its counts for the next one; past the bound new counts are dropped and counted")
    func failedFlushAndBound() throws {
        let tally = VerificationTally(clock: SettableWallClock(Self.now), maximumPending: 2)
        let store = CountStore()
        tally.verificationFinished(.attestation, outcome: "ok", clientID: "clid_a")
        store.failing.store(true, ordering: .relaxed)
        #expect(throws: StorageError.self) { try tally.flush(into: store) }
        tally.verificationFinished(.attestation, outcome: "ok", clientID: "clid_a")
        tally.verificationFinished(.attestation, outcome: "ok", clientID: "clid_b")
        tally.verificationFinished(.attestation, outcome: "ok", clientID: "clid_c")
        #expect(tally.dropped == 1)
        store.failing.store(false, ordering: .relaxed)
        try tally.flush(into: store)
        let hour = Self.now - Self.now % 3600
        #expect(store.total("clid_a") == ["\(hour) attestation ok": 2])
        #expect(store.total("clid_b") == ["\(hour) attestation ok": 1])
        #expect(store.total("clid_c").isEmpty)
    }

    @Test("the series: 24 hourly buckets ending with now's, verified and tokens apart from refusals, refusals ranked")
    func series() {
        let hour = Self.now - Self.now % 3600
        let counts = [
            VerificationCount(clientID: "clid_a", start: hour, kind: .attestation, outcome: "ok", count: 3),
            VerificationCount(clientID: "clid_a", start: hour, kind: .debug, outcome: "ok", count: 2),
            VerificationCount(clientID: "clid_a", start: hour - 3600, kind: .assertion, outcome: "assertion_counter", count: 4),
            VerificationCount(clientID: "clid_a", start: hour, kind: .attestation, outcome: "attestation_nonce", count: 4),
            VerificationCount(clientID: "clid_a", start: hour, kind: .attestation, outcome: "attestation_app_id", count: 1),
            // Outside the range: ignored.
            VerificationCount(clientID: "clid_a", start: hour - 24 * 3600, kind: .attestation, outcome: "ok", count: 100),
        ]
        let series = VerificationSeries(counts, range: .day, now: Self.now)
        #expect(series.buckets.count == 24 && series.bucketSeconds == 3600)
        #expect(series.buckets.first?.start == hour - 23 * 3600 && series.buckets.last?.start == hour)
        let last = series.buckets[23]
        #expect(last.verified == 3 && last.tokens == 5 && last.refused == 5)
        #expect(series.buckets[22].refused == 4 && series.buckets[22].verified == 0)
        #expect(series.refusals.map(\.reason) == ["assertion_counter", "attestation_nonce", "attestation_app_id"])
        #expect(series.buckets.dropLast(2).allSatisfy { $0 == VerificationSeries.Bucket(start: $0.start) })
        let month = VerificationSeries(counts, range: .month, now: Self.now)
        #expect(month.buckets.count == 30 && month.buckets.last?.start == Self.now - Self.now % 86_400)
    }
}
