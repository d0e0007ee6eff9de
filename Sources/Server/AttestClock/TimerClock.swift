package import Dispatch
import Synchronization

/// The server's one monotonic clock and its one-shot timers: what the lookup deadlines
/// (`AnswerDeadlines`), the purge's timer (`PurgeTimer`), the offload threads' idle limit
/// (`WriteWaiters`) and PostgreSQL's answer lease measure and wait on. A seam: tests give a clock
/// they move by hand (`ManualTimerClock` in AttestTesting), so a deadline, a purge tick, an idle
/// thread's end or a lease's renewal comes without real time passing (decision 0026).
package protocol TimerClock: Sendable {
    /// Now, on a monotonic clock.
    func now() -> ContinuousClock.Instant
    /// Runs `work` on `queue` once `delay` has passed on this clock, unless cancelled first.
    func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) -> ClockTimer
}

/// A scheduled work item of an `TimerClock`: cancelled, it does not run (if it has not started).
package struct ClockTimer: Sendable {
    private let cancellation: @Sendable () -> Void

    package init(cancel: @escaping @Sendable () -> Void) {
        cancellation = cancel
    }

    package func cancel() { cancellation() }
}

/// The system's continuous clock and Dispatch's timers.
package struct SystemTimerClock: TimerClock {
    package init() {}

    package func now() -> ContinuousClock.Instant { ContinuousClock.now }

    package func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) -> ClockTimer {
        let cancelled = CancelFlag()
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(max(0, nanoseconds)))) {
            if !cancelled.value.load(ordering: .acquiring) { work() }
        }
        return ClockTimer { cancelled.value.store(true, ordering: .releasing) }
    }
}

/// Set once a timer is cancelled.
private final class CancelFlag: Sendable {
    let value = Atomic<Bool>(false)
}
