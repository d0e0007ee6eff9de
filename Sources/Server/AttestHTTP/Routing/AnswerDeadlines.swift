import AttestClock
import AttestHTTPServer
import AttestService
import Dispatch
import Synchronization

/// The deadline of every lookup's answer (`RouteAnswer.lookup`): past it the request
/// is answered 503 `storage_unavailable` with `Retry-After`, and the route's own answer, should
/// it still come, is dropped. Why: a lookup waits for the database without an HTTP worker, so
/// nothing else bounds how long its client waits when the database stops answering.
///
/// One timer at a time, armed for the earliest pending deadline, rather than one per request
/// (authorize runs at tens of thousands a second); answered requests leave the table at once.
final class AnswerDeadlines: Sendable {
    private struct Entry {
        let deadline: ContinuousClock.Instant
        let expire: @Sendable () -> Void
    }

    private struct State {
        var pending: [UInt64: Entry] = [:]
        var nextTicket: UInt64 = 0
        /// Whether a wake-up is scheduled.
        var armed = false
    }

    /// How long a later answer may take.
    let limit: Duration
    private let state = Mutex(State())
    /// A serial queue of its own: Dispatch gives it a thread even when every thread of the
    /// global queue is blocked (a lookup's sender waits on its round trip there).
    private let queue = DispatchQueue(label: "attestd.answer-deadlines")
    private let clock: any TimerClock

    init(limit: Duration, clock: any TimerClock = SystemTimerClock()) {
        self.limit = limit
        self.clock = clock
    }

    /// Registers a request waiting for its answer; `expire` runs once past the deadline unless
    /// the ticket is removed first.
    func add(expire: @escaping @Sendable () -> Void) -> UInt64 {
        let (ticket, arm) = state.withLock { state -> (UInt64, Bool) in
            state.nextTicket += 1
            state.pending[state.nextTicket] = Entry(deadline: clock.now() + limit, expire: expire)
            defer { state.armed = true }
            return (state.nextTicket, !state.armed)
        }
        if arm { schedule(after: limit) }
        return ticket
    }

    /// The request was answered: its deadline no longer matters.
    func remove(_ ticket: UInt64) {
        _ = state.withLock { $0.pending.removeValue(forKey: ticket) }
    }

    /// Requests waiting now (tests).
    var pendingCount: Int { state.withLock { $0.pending.count } }

    private func schedule(after delay: Duration) {
        _ = clock.schedule(after: max(delay, .milliseconds(1)), on: queue) { self.wake() }
    }

    /// Expires the overdue requests and arms the next wake-up, if any request is left.
    private func wake() {
        let now = clock.now()
        let (overdue, next) = state.withLock { state -> ([Entry], ContinuousClock.Instant?) in
            let overdue = state.pending.filter { $0.value.deadline <= now }
            for ticket in overdue.keys { state.pending.removeValue(forKey: ticket) }
            let next = state.pending.values.map(\.deadline).min()
            state.armed = next != nil
            return (Array(overdue.values), next)
        }
        if let next { schedule(after: next - now) }
        for entry in overdue { entry.expire() }
    }
}

/// One later answer: given once, by the route or by its deadline, whichever comes first.
final class PendingAnswer: Sendable {
    private struct State {
        var answered = false
        var ticket: UInt64?
    }

    private let state = Mutex(State())
    private let deadlines: AnswerDeadlines
    private let send: @Sendable (@escaping RouteAnswer.Handler) -> Void

    /// `send` delivers the handler of the response (once).
    init(deadlines: AnswerDeadlines, send: @escaping @Sendable (@escaping RouteAnswer.Handler) -> Void) {
        self.deadlines = deadlines
        self.send = send
    }

    /// The route's answer, or the deadline's: only the first counts.
    func reply(_ handler: @escaping RouteAnswer.Handler) {
        let ticket = state.withLock { state -> UInt64?? in
            guard !state.answered else { return .none }
            state.answered = true
            return .some(state.ticket)
        }
        guard case .some(let registered) = ticket else { return }
        if let registered { deadlines.remove(registered) }
        send(handler)
    }

    /// Starts the deadline, unless the answer came already (a store that answered at once).
    func startDeadline() {
        let limit = deadlines.limit
        state.withLock { state in
            guard !state.answered else { return }
            state.ticket = deadlines.add { [self] in
                let milliseconds = Int(limit.components.seconds * 1000 + limit.components.attoseconds / 1_000_000_000_000_000)
                reply { _ in throw ServiceError.storageTimedOut(after: milliseconds) }
            }
        }
    }
}
