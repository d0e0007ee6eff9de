package import AttestClock
import Dispatch
import Foundation
import Synchronization

/// The HTTP edge's offload threads: a route that must wait for the store (a durable write, a
/// verification) runs its synchronous handler here (`RouteAnswer.offload`), so that the worker
/// that parsed the request serves the next one and no connection it serves waits for a
/// statement; the writes that arrive while one commit is flushed share the next flush (SQLite's
/// group commit; PostgreSQL's own). As nginx's thread pools take blocking file operations off its
/// event loops (docs/decisions/0005-offload-seam.md).
///
/// Threads start when work arrives and none is idle, up to `limit`, and end after
/// `idleLimit` without work on `clock`, so a server that is never asked costs no thread. Work runs first
/// come, first served. `stop` comes after the HTTP server has stopped, when no answer can reach a
/// client any more: work already running finishes (a write is never cut short), work still queued
/// is withdrawn without running (its `withdrawn` closure runs instead: nothing of it was done,
/// so its challenge is not spent, as for a request refused at a stop), and `stop` returns once
/// the last thread has ended (the store is closed after it). Work given after `stop` is
/// withdrawn at once, on the caller's thread.
package final class WriteWaiters: Sendable {
    package typealias Work = @Sendable () -> Void

    private struct Entry {
        let work: Work
        let withdrawn: Work
    }

    /// One thread's side of the state.
    private struct Waiter {
        let wakeUp = DispatchSemaphore(value: 0)
        /// Since when it has waited for work; nil while it works.
        var idleSince: ContinuousClock.Instant?
        /// Whether an idle check is scheduled for it (at most one at a time).
        var checkScheduled = false
        /// Ended by its idle check: it returns when woken.
        var retired = false
    }

    private struct State {
        var queued: [Entry] = []
        var waiters: [Int: Waiter] = [:]
        /// The threads waiting for work, the latest last.
        var idle: [Int] = []
        var nextID = 0
        var running = 0
        var stopping = false
    }

    private let state = Mutex(State())
    /// Entered by every thread started, left when it ends (`stop` waits for it).
    private let threads = DispatchGroup()
    /// The most threads at once.
    package let limit: Int
    private let idleLimit: Duration
    private let clock: any TimerClock
    /// Where the idle checks run.
    private let checks = DispatchQueue(label: "attestd-waiters-idle")

    package init(limit: Int, idleLimit: Duration = .seconds(2), clock: any TimerClock = SystemTimerClock()) {
        self.limit = max(1, limit)
        self.idleLimit = idleLimit
        self.clock = clock
    }

    /// Threads running now, and work waiting for one (tests, metrics).
    package var load: (threads: Int, queued: Int) { state.withLock { ($0.running, $0.queued.count) } }

    /// Threads waiting for work now (tests).
    package var idleThreads: Int { state.withLock { $0.idle.count } }

    /// Runs `work` on one of the threads; runs `withdrawn` instead if `stop` comes before `work`
    /// has started, or has begun already (then on this thread).
    package func run(_ work: @escaping Work, withdrawn: @escaping Work) {
        enum Next {
            case wake(DispatchSemaphore)
            case start(Int, DispatchSemaphore)
            case wait
            case withdraw
        }
        let next = state.withLock { state -> Next in
            guard !state.stopping else { return .withdraw }
            state.queued.append(Entry(work: work, withdrawn: withdrawn))
            if let waiting = state.idle.popLast(), let waiter = state.waiters[waiting] {
                state.waiters[waiting]?.idleSince = nil
                return .wake(waiter.wakeUp)
            }
            guard state.running < limit else { return .wait }
            state.running += 1
            state.nextID += 1
            let waiter = Waiter()
            state.waiters[state.nextID] = waiter
            // Under the lock, so that a `stop` that follows finds the thread counted.
            threads.enter()
            return .start(state.nextID, waiter.wakeUp)
        }
        switch next {
        case .wake(let waiting): waiting.signal()
        case .start(let id, let wakeUp): start(id, wakeUp)
        case .wait: break
        case .withdraw: withdrawn()
        }
    }

    /// Withdraws the queued work, lets the running work finish and waits until every thread has ended.
    package func stop() {
        let (waiting, withdrawn) = state.withLock { state -> ([DispatchSemaphore], [Entry]) in
            state.stopping = true
            defer {
                state.idle = []
                state.queued = []
            }
            return (state.idle.compactMap { state.waiters[$0]?.wakeUp }, state.queued)
        }
        for entry in withdrawn { entry.withdrawn() }
        for thread in waiting { thread.signal() }
        threads.wait()
    }

    /// Starts thread `id`, woken by `wakeUp` (`threads` entered already).
    private func start(_ id: Int, _ wakeUp: DispatchSemaphore) {
        // A thread of its own, as the answer lease's, not one of Dispatch's shared pool: a waiter
        // keeps its thread through its idle wait and through a slow statement.
        let thread = Thread { [self] in
            serve(id, wakeUp)
            threads.leave()
        }
        thread.name = "attestd-waiter"
        thread.start()
    }

    /// Thread `id`'s loop: work while there is some, then wait for more until its idle check ends it.
    private func serve(_ id: Int, _ wakeUp: DispatchSemaphore) {
        enum Next {
            case work(Work)
            case wait(check: Bool)
            case end
        }
        while true {
            let next = state.withLock { state -> Next in
                if state.waiters[id]?.retired ?? true {
                    state.waiters[id] = nil
                    return .end
                }
                if !state.queued.isEmpty {
                    state.waiters[id]?.idleSince = nil
                    return .work(state.queued.removeFirst().work)
                }
                if state.stopping {
                    state.running -= 1
                    state.waiters[id] = nil
                    return .end
                }
                state.idle.append(id)
                state.waiters[id]?.idleSince = clock.now()
                let check = !(state.waiters[id]?.checkScheduled ?? true)
                state.waiters[id]?.checkScheduled = true
                return .wait(check: check)
            }
            switch next {
            case .end:
                return
            case .work(let work):
                work()
            case .wait(let check):
                if check { scheduleIdleCheck(id, after: idleLimit) }
                wakeUp.wait()
            }
        }
    }

    /// Ends thread `id` if it has waited `idleLimit` for work by then; checks again later if it
    /// has waited less (it worked meanwhile), so that each thread has one check scheduled at most.
    private func scheduleIdleCheck(_ id: Int, after delay: Duration) {
        _ = clock.schedule(after: delay, on: checks) { [self] in
            let (wake, again) = state.withLock { state -> (DispatchSemaphore?, Duration?) in
                guard let waiter = state.waiters[id] else { return (nil, nil) }
                guard let since = waiter.idleSince, !state.stopping else {
                    state.waiters[id]?.checkScheduled = false
                    return (nil, nil)
                }
                let waited = clock.now() - since
                guard waited >= idleLimit else { return (nil, idleLimit - waited) }
                state.idle.removeAll { $0 == id }
                state.waiters[id]?.retired = true
                state.running -= 1
                return (waiter.wakeUp, nil)
            }
            wake?.signal()
            if let again { scheduleIdleCheck(id, after: again) }
        }
    }
}
