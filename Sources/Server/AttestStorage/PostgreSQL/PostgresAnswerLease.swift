import AttestClock
import Dispatch
import Synchronization

/// How long a node's permission to answer token lookups from memory lasts, and how often it is renewed.
package struct AnswerLeaseTiming: Sendable {
    /// Renewed this often; also how long a revocation waits, at most, for a running node to
    /// withdraw what it kept.
    package var renewEvery: Duration
    /// A renewal lets the node answer from memory for this long: a node that can no longer renew
    /// (its process hung, the network or the server gone) stops by itself within it, and a
    /// revocation waits at most this long for a node that died without withdrawing its lease.
    package var lasts: Duration
    /// A revocation that has not seen every live lease acknowledge it after this long throws (it
    /// stays committed): a node that renews without acknowledging, or a database that stops
    /// answering the revocation's polls.
    package var waitLimit: Duration
    /// How long a stop waits for the lease thread to delete the node's row (a database that
    /// hangs must not hold up attestd's stop: the row then runs out by itself within `lasts`).
    package var stopWait: Duration

    package init(
        renewEvery: Duration = .milliseconds(100), lasts: Duration = .seconds(2), waitLimit: Duration = .seconds(10),
        stopWait: Duration = .seconds(1)
    ) {
        self.renewEvery = renewEvery
        self.lasts = lasts
        self.waitLimit = waitLimit
        self.stopWait = stopWait
    }
}

/// One node's lease to answer token lookups from memory on PostgreSQL (`TokenLookupCache`), and
/// the generation of what it keeps: the node's side of the protocol in
/// docs/design/answer-lease.md (decision 0013).
///
/// Each renewal is one statement that extends the node's row in `answer_leases` by `lasts` on the
/// database's clock, acknowledges the epoch the node has applied, and returns the current one. A
/// new epoch is applied (every answer kept under the old one is never served again) before it
/// is acknowledged, and the node answers from memory only until `lasts` after it sent its last
/// successful renewal, by its own monotonic clock: that is never later than the row's expiry,
/// which the database set after the statement arrived. A revocation raises the epoch and returns
/// once every unexpired lease has acknowledged it, so no node answers from memory what it
/// revoked. A renewal that fails withdraws the lease at once (answers go to the database, which
/// answers 503 when it is down).
///
/// Answers are kept under a generation of this node's own, not under the database's epoch: it
/// moves on whenever the applied epoch changes, whatever the new value, and whenever the lease is
/// withdrawn, so an answer kept before is never served again even if the epoch goes back (a
/// restored backup, a standby promoted without the last commits) and climbs to the same value.
final class PostgresAnswerLease: AnswerStamps {
    /// One renewal: the node's name, the epoch it acknowledges, the lease's length in
    /// milliseconds; returns the current epoch.
    typealias Renew = @Sendable (String, Int64, Int64) throws(StorageError) -> Int64

    /// This node's row in `answer_leases` (random per process).
    let node: String
    let timing: AnswerLeaseTiming
    private let renew: Renew
    /// Deletes the node's row once the thread has stopped renewing (best effort).
    private let release: @Sendable (String) -> Void
    /// What the lease's validity is measured on and its renewals are scheduled on.
    private let clock: any TimerClock
    private let origin: ContinuousClock.Instant
    /// Until when (nanoseconds after `origin`) answers may be served from memory; 0: not at all.
    private let validUntil = Atomic<Int64>(0)
    /// The epoch applied and acknowledged at the next renewal.
    private let epoch = Atomic<Int64>(-1)
    /// What answers are kept under (`current()`): moves on with every new epoch and withdrawal.
    private let generation = Atomic<Int64>(0)
    private let isStarted = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    /// Where renewals and the release run, one at a time.
    private let queue = DispatchQueue(label: "attestd-answer-lease")
    /// The next renewal, cancelled by `stop`.
    private let next = Mutex<ClockTimer?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    init(
        timing: AnswerLeaseTiming, clock: any TimerClock = SystemTimerClock(), release: @escaping @Sendable (String) -> Void = { _ in },
        renew: @escaping Renew
    ) {
        node = "node_" + String(UInt64.random(in: .min ... .max), radix: 36) + String(UInt64.random(in: .min ... .max), radix: 36)
        self.timing = timing
        self.renew = renew
        self.release = release
        self.clock = clock
        origin = clock.now()
    }

    /// The generation to keep answers under, or nil while the lease does not allow answering
    /// from memory.
    func current() -> Int64? {
        let until = validUntil.load(ordering: .acquiring)
        guard until != 0, Self.nanoseconds(clock.now() - origin) < until else { return nil }
        return generation.load(ordering: .acquiring)
    }

    /// One renewal (the thread's tick; tests call it directly). A new epoch is applied, then
    /// acknowledged by a second renewal right away, so a revocation waits about one `renewEvery`.
    func renewOnce() {
        var applied = epoch.load(ordering: .acquiring)
        do throws(StorageError) {
            for _ in 0..<3 {
                let sentAt = Self.nanoseconds(clock.now() - origin)
                let current = try renew(node, applied, Self.milliseconds(timing.lasts))
                if current == applied {
                    validUntil.store(sentAt + Self.nanoseconds(timing.lasts) * 9 / 10, ordering: .releasing)
                    // A stop that came meanwhile wins.
                    if stopped.load(ordering: .acquiring) { withdraw() }
                    return
                }
                // Every answer kept before is retired before the new epoch is acknowledged.
                generation.add(1, ordering: .acquiringAndReleasing)
                epoch.store(current, ordering: .releasing)
                applied = current
            }
            // The epoch moved on three times in a row: acknowledged at the next tick.
        } catch {
            withdraw()
        }
    }

    /// Stops answering from memory until the next successful renewal, and never again with what
    /// was kept before.
    func withdraw() {
        validUntil.store(0, ordering: .releasing)
        generation.add(1, ordering: .acquiringAndReleasing)
    }

    /// Renews now and then every `renewEvery` of the clock until `stop` (once; later calls do
    /// nothing). Renewals run one at a time on the lease's own queue, so that a renewal waiting
    /// for a slow database delays the next one and nothing else.
    func start() {
        guard !stopped.load(ordering: .acquiring),
            isStarted.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        schedule(after: .zero)
    }

    private func schedule(after delay: Duration) {
        let timer = clock.schedule(after: delay, on: queue) { [self] in
            guard !stopped.load(ordering: .acquiring) else { return }
            renewOnce()
            schedule(after: timing.renewEvery)
        }
        next.withLock { $0 = timer }
    }

    /// Whether `start` was called.
    var started: Bool { isStarted.load(ordering: .acquiring) }

    /// Stops answering from memory at once, and renewing; returns once the thread has deleted
    /// the node's row, or after `timeout`. Later calls return at once.
    func stop(timeout: Duration = .seconds(1)) {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        withdraw()
        next.withLock { $0?.cancel() }
        guard started else { return }
        // Behind a renewal that is running, so that none writes the row again: a revocation need
        // not wait for this node's lease to run out. Withdrawn here too, after the last renewal:
        // whatever it stored, nothing is served after the stop.
        queue.async { [self] in
            withdraw()
            release(node)
            finished.signal()
        }
        _ = finished.wait(timeout: .now() + .nanoseconds(Int(Self.nanoseconds(timeout))))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }

    private static func milliseconds(_ duration: Duration) -> Int64 { nanoseconds(duration) / 1_000_000 }
}
