import AttestTesting
import Synchronization
import Testing

@testable import AttestStorage

/// The node's side of the answer lease, without a database: what it lets a node answer from
/// memory, and in which order it applies and acknowledges a new epoch.
@Suite("Answer lease: when a node may answer from memory")
struct AnswerLeaseTests {
    /// A lease on a clock the test moves, renewed by a closure that answers from `answers` and records what each renewal acknowledged.
    final class World: Sendable {
        let clock = ManualTimerClock()
        let acknowledged = Mutex<[Int64]>([])
        /// What the next renewals answer (the last one repeats); nil: the renewal fails.
        let answers = Mutex<[Int64?]>([0])
        /// What `current()` said while each renewal ran.
        let seenDuringRenewal = Mutex<[Int64?]>([])
        /// The nodes whose row the lease released.
        let released = Mutex<[String]>([])
        private let leaseBox = Mutex<PostgresAnswerLease?>(nil)
        /// Set once, at the end of init (the renewal closure needs the lease it belongs to).
        var lease: PostgresAnswerLease {
            guard let lease = leaseBox.withLock({ $0 }) else { preconditionFailure("no lease yet") }
            return lease
        }

        init(lasts: Duration = .seconds(2)) {
            let timing = AnswerLeaseTiming(renewEvery: .milliseconds(100), lasts: lasts)
            let lease = PostgresAnswerLease(
                timing: timing, clock: clock, release: { [unowned self] node in released.withLock { $0.append(node) } }
            ) {
                [unowned self] _, acked, _ throws(StorageError) -> Int64 in
                acknowledged.withLock { $0.append(acked) }
                seenDuringRenewal.withLock { $0.append(self.lease.current()) }
                let next = answers.withLock { answers in answers.count > 1 ? answers.removeFirst() : answers[0] }
                guard let next else { throw .unavailable("the server is gone") }
                return next
            }
            leaseBox.withLock { $0 = lease }
        }

        func advance(_ duration: Duration) { clock.advance(by: duration) }
    }

    /// A cache under the lease, and `look()`: a lookup of `TokenLookupCacheTests.record` through
    /// it, counting those that reach the (stand-in) database.
    final class CountedLookups: Sendable {
        let cache: TokenLookupCache<PostgresAnswerLease>
        let lookups = Atomic<Int>(0)

        init(_ lease: PostgresAnswerLease) { cache = TokenLookupCache(stamps: lease) }

        func look() throws -> TokenRecord? {
            let record = TokenLookupCacheTests.record
            return try cache.activeToken(hash: record.tokenHash, at: 2_000) { () throws(StorageError) -> TokenRecord? in
                lookups.add(1, ordering: .relaxed)
                return record
            }
        }
    }

    @Test("nothing from memory before the first renewal; after it, the epoch the database answered is applied and acknowledged")
    func firstRenewal() {
        let world = World()
        #expect(world.lease.current() == nil)
        world.answers.withLock { $0 = [4] }
        world.lease.renewOnce()
        #expect(world.lease.current() != nil)
        // The first renewal acknowledged nothing yet (-1); the second acknowledged epoch 4.
        #expect(world.acknowledged.withLock { $0 } == [-1, 4])
    }

    @Test("answers from memory stop before the lease runs out on the database's clock (a tenth of it kept as margin)")
    func leaseRunsOut() {
        let world = World(lasts: .seconds(2))
        world.lease.renewOnce()
        world.lease.renewOnce()
        let generation = world.lease.current()
        world.advance(.milliseconds(1_700))
        #expect(generation != nil && world.lease.current() == generation)
        world.advance(.milliseconds(150))
        #expect(world.lease.current() == nil, "1.85 s after the renewal was sent, past 9/10 of a 2 s lease")
        world.lease.renewOnce()
        #expect(world.lease.current() == generation, "a renewal of the same epoch keeps what was kept")
    }

    @Test("a renewal that fails withdraws the lease at once, long before it would run out")
    func failedRenewal() throws {
        let world = World()
        world.lease.renewOnce()
        let before = try #require(world.lease.current())
        world.answers.withLock { $0 = [nil] }
        world.lease.renewOnce()
        #expect(world.lease.current() == nil)
        world.answers.withLock { $0 = [0] }
        world.lease.renewOnce()
        let after = try #require(world.lease.current())
        #expect(after != before, "what was kept before the lease was withdrawn is served again")
    }

    @Test("a new epoch is applied before it is acknowledged: while the acknowledgement is on its way, nothing of the old one is served")
    func appliedBeforeAcknowledged() throws {
        let world = World()
        world.lease.renewOnce()
        world.lease.renewOnce()
        let old = try #require(world.lease.current())
        world.acknowledged.withLock { $0 = [] }
        world.seenDuringRenewal.withLock { $0 = [] }
        world.answers.withLock { $0 = [7] }
        world.lease.renewOnce()
        #expect(world.acknowledged.withLock { $0 } == [0, 7])
        let seen = world.seenDuringRenewal.withLock { $0 }
        #expect(
            seen.count == 2 && seen[0] == old && seen[1] != nil && seen[1] != old,
            "the renewal acknowledging 7 ran while what was kept under 0 was still served: \(seen)")
        #expect(world.lease.current() == seen.last ?? nil)
    }

    @Test(
        "an epoch that goes back and climbs to the same value (a restored backup, a standby without the last commits) serves nothing kept before"
    )
    func epochGoesBack() throws {
        let world = World()
        world.answers.withLock { $0 = [5] }
        world.lease.renewOnce()
        let cached = CountedLookups(world.lease)
        func look() throws -> TokenRecord? { try cached.look() }
        _ = try look()
        _ = try look()
        #expect(cached.lookups.load(ordering: .relaxed) == 1)
        world.answers.withLock { $0 = [4] }
        world.lease.renewOnce()
        world.answers.withLock { $0 = [5] }
        world.lease.renewOnce()
        _ = try look()
        #expect(cached.lookups.load(ordering: .relaxed) == 2, "an answer kept under epoch 5 was served when the epoch came back to 5")
    }

    @Test("started, it renews at once and then every `renewEvery` of its clock; stopped, it renews no more and releases its row")
    func renewsOnItsClock() {
        let world = World()
        world.lease.start()
        // The first renewal acknowledges nothing yet, and a second acknowledges the epoch at once.
        #expect(eventually { world.acknowledged.withLock { $0 } == [-1, 0] })
        #expect(world.lease.current() != nil)
        world.advance(.milliseconds(99))
        #expect(world.acknowledged.withLock { $0.count } == 2)
        world.advance(.milliseconds(1))
        #expect(world.acknowledged.withLock { $0 } == [-1, 0, 0])
        world.advance(.milliseconds(300))
        #expect(world.acknowledged.withLock { $0.count } == 6)
        world.lease.stop()
        #expect(world.released.withLock { $0 } == [world.lease.node])
        #expect(world.lease.current() == nil)
        world.advance(.seconds(1))
        #expect(world.acknowledged.withLock { $0.count } == 6, "renewed after the stop")
    }

    @Test("a stop withdraws the lease, and a renewal that answers after it does not bring it back")
    func stop() {
        let world = World()
        world.lease.renewOnce()
        world.lease.stop()
        #expect(world.lease.current() == nil)
        world.lease.renewOnce()
        #expect(world.lease.current() == nil)
    }

    @Test("kept answers are served only under the stamp they were read under; one read while it changed is not kept")
    func cacheFollowsTheEpoch() throws {
        let world = World()
        world.lease.renewOnce()
        let cached = CountedLookups(world.lease)
        let (cache, record) = (cached.cache, TokenLookupCacheTests.record)
        func look() throws -> TokenRecord? { try cached.look() }
        #expect(try look() == record)
        #expect(try look() == record)
        #expect(cached.lookups.load(ordering: .relaxed) == 1)
        world.answers.withLock { $0 = [1] }
        world.lease.renewOnce()
        #expect(try look() == record)
        #expect(cached.lookups.load(ordering: .relaxed) == 2, "an answer kept under epoch 0 was served under epoch 1")
        // The epoch moves while the lookup runs: its answer is not kept.
        world.answers.withLock { $0 = [2] }
        _ = try cache.activeToken(hash: Array(repeating: 9, count: 32), at: 2_000) { () throws(StorageError) -> TokenRecord? in
            world.lease.renewOnce()
            return record
        }
        #expect(
            try cache.activeToken(hash: Array(repeating: 9, count: 32), at: 2_000) { () throws(StorageError) -> TokenRecord? in nil } == nil
        )
        // Without a lease nothing is served or kept.
        world.lease.withdraw()
        #expect(try look() == record)
        #expect(cached.lookups.load(ordering: .relaxed) == 3)
    }
}
