package import AttestClock
package import Dispatch
import Synchronization

/// A `TimerClock` the test moves: timers run when `advance` passes their time (on their queue, and
/// `advance` returns once they have run), so a lookup deadline, a purge tick, an idle thread's end
/// or a lease's renewal takes no real time. Work scheduled with no delay runs at once.
package final class ManualTimerClock: TimerClock {
    private struct Pending {
        let due: ContinuousClock.Instant
        let queue: DispatchQueue
        let work: @Sendable () -> Void
    }

    private struct State {
        var now = ContinuousClock.now
        var pending: [UInt64: Pending] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    package init() {}

    package func now() -> ContinuousClock.Instant { state.withLock { $0.now } }

    /// Timers not yet run.
    package var pendingCount: Int { state.withLock { $0.pending.count } }

    package func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) -> ClockTimer {
        let (id, dueNow) = state.withLock { state -> (UInt64, Bool) in
            state.nextID += 1
            guard delay > .zero else { return (state.nextID, true) }
            state.pending[state.nextID] = Pending(due: state.now + delay, queue: queue, work: work)
            return (state.nextID, false)
        }
        if dueNow { queue.async(execute: work) }
        return ClockTimer { [weak self] in _ = self?.state.withLock { $0.pending.removeValue(forKey: id) } }
    }

    /// Moves the clock on by `duration`, running every timer it passes, earliest first (timers
    /// they schedule within the same span run too), and waits until they have run.
    package func advance(by duration: Duration) {
        let end = state.withLock { $0.now } + duration
        while true {
            let next = state.withLock { state -> Pending? in
                guard let (id, earliest) = state.pending.min(by: { $0.value.due < $1.value.due }), earliest.due <= end else { return nil }
                state.pending.removeValue(forKey: id)
                state.now = max(state.now, earliest.due)
                return earliest
            }
            guard let next else { break }
            next.queue.async(execute: next.work)
            next.queue.sync {}
        }
        state.withLock { $0.now = end }
    }
}
