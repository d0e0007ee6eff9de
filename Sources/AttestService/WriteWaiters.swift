import Dispatch
import Synchronization

/// Threads that wait for the store's durable writes on behalf of the HTTP workers
/// (`TokenService.attest(_:from:then:)`, `refresh(_:from:then:)`, and a challenge's insert,
/// `issueChallenge(clientID:from:then:)`): a worker verifies, hands the write here and serves
/// the next request, and the writes that arrive while one commit is being flushed share the next
/// flush (SQLite's group commit; PostgreSQL's own). As nginx's thread
/// pools take blocking file operations off its event loops.
///
/// Threads start when work arrives and none is idle, up to `limit`, and end after
/// `idleLimit` without work, so a service that is never asked costs no thread. Work runs first
/// come, first served. `stop` lets every queued write finish and returns once the last thread
/// has ended (the store is closed after it); work given after `stop` runs on the caller's thread.
final class WriteWaiters: Sendable {
    typealias Work = @Sendable () -> Void

    private struct State {
        var queued: [Work] = []
        /// The semaphores of the threads waiting for work, the latest last.
        var idle: [DispatchSemaphore] = []
        var running = 0
        var stopping = false
    }

    private let state = Mutex(State())
    /// Entered by every thread started, left when it ends (`stop` waits for it).
    private let threads = DispatchGroup()
    /// The most threads at once.
    let limit: Int
    private let idleLimit: Duration

    init(limit: Int, idleLimit: Duration = .seconds(2)) {
        self.limit = max(1, limit)
        self.idleLimit = idleLimit
    }

    /// Threads running now, and work waiting for one (tests, metrics).
    var load: (threads: Int, queued: Int) { state.withLock { ($0.running, $0.queued.count) } }

    /// Runs `work` on one of the threads, or on this one once `stop` has begun.
    func run(_ work: @escaping Work) {
        enum Next {
            case wake(DispatchSemaphore)
            case start
            case wait
            case runHere
        }
        let next = state.withLock { state -> Next in
            guard !state.stopping else { return .runHere }
            state.queued.append(work)
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
        case .runHere: work()
        }
    }

    /// Runs `body` as `run` does, and tells `reply` its outcome.
    func run<T: Sendable>(
        _ body: @escaping @Sendable () throws(ServiceError) -> T, then reply: @escaping @Sendable (Result<T, ServiceError>) -> Void
    ) {
        run { reply(Result { () throws(ServiceError) -> T in try body() }) }
    }

    /// Lets the queued work finish and waits until every thread has ended.
    func stop() {
        let waiting = state.withLock { state -> [DispatchSemaphore] in
            state.stopping = true
            defer { state.idle = [] }
            return state.idle
        }
        for thread in waiting { thread.signal() }
        threads.wait()
    }

    /// Starts a thread (`threads` entered already).
    private func start() {
        // A serial queue of its own gets a thread even while every other thread blocks.
        DispatchQueue(label: "attestd.write-waiter").async { [self] in
            serve()
            threads.leave()
        }
    }

    /// One thread's loop: work while there is some, then wait for more until idle too long.
    private func serve() {
        let wakeUp = DispatchSemaphore(value: 0)
        while true {
            let next = state.withLock { state -> Work?? in
                if !state.queued.isEmpty { return .some(state.queued.removeFirst()) }
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
