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
/// `idleLimit` without work, so a server that is never asked costs no thread. Work runs first
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

    private struct State {
        var queued: [Entry] = []
        /// The semaphores of the threads waiting for work, the latest last.
        var idle: [DispatchSemaphore] = []
        var running = 0
        var stopping = false
    }

    private let state = Mutex(State())
    /// Entered by every thread started, left when it ends (`stop` waits for it).
    private let threads = DispatchGroup()
    /// The most threads at once.
    package let limit: Int
    private let idleLimit: Duration

    package init(limit: Int, idleLimit: Duration = .seconds(2)) {
        self.limit = max(1, limit)
        self.idleLimit = idleLimit
    }

    /// Threads running now, and work waiting for one (tests, metrics).
    package var load: (threads: Int, queued: Int) { state.withLock { ($0.running, $0.queued.count) } }

    /// Runs `work` on one of the threads; runs `withdrawn` instead if `stop` comes before `work`
    /// has started, or has begun already (then on this thread).
    package func run(_ work: @escaping Work, withdrawn: @escaping Work) {
        enum Next {
            case wake(DispatchSemaphore)
            case start
            case wait
            case withdraw
        }
        let next = state.withLock { state -> Next in
            guard !state.stopping else { return .withdraw }
            state.queued.append(Entry(work: work, withdrawn: withdrawn))
            if let waiting = state.idle.popLast() { return .wake(waiting) }
            guard state.running < limit else { return .wait }
            state.running += 1
            // Under the lock, so that a `stop` that follows finds the thread counted.
            threads.enter()
            return .start
        }
        switch next {
        case .wake(let waiting): waiting.signal()
        case .start: start()
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
            return (state.idle, state.queued)
        }
        for entry in withdrawn { entry.withdrawn() }
        for thread in waiting { thread.signal() }
        threads.wait()
    }

    /// Starts a thread (`threads` entered already).
    private func start() {
        // A thread of its own, as the answer lease's, not one of Dispatch's shared pool: a waiter
        // keeps its thread through its idle wait and through a slow statement.
        let thread = Thread { [self] in
            serve()
            threads.leave()
        }
        thread.name = "attestd-waiter"
        thread.start()
    }

    /// One thread's loop: work while there is some, then wait for more until idle too long.
    private func serve() {
        let wakeUp = DispatchSemaphore(value: 0)
        while true {
            let next = state.withLock { state -> Work?? in
                if !state.queued.isEmpty { return .some(state.queued.removeFirst().work) }
                if state.stopping {
                    state.running -= 1
                    return .none
                }
                state.idle.append(wakeUp)
                return .some(nil)
            }
            switch next {
            case .none:
                return
            case .some(.some(let work)):
                work()
            case .some(.none):
                guard wakeUp.wait(timeout: .now() + .milliseconds(Int(idleLimit / .milliseconds(1)))) == .timedOut else { continue }
                let ends = state.withLock { state -> Bool in
                    guard let index = state.idle.firstIndex(where: { $0 === wakeUp }) else { return false }
                    state.idle.remove(at: index)
                    state.running -= 1
                    return true
                }
                if ends { return }
                // Woken as the wait timed out: take the signal given, then look for the work.
                wakeUp.wait()
            }
        }
    }
}
