import Dispatch
import Synchronization

/// Runs requests that arrive while a statement is in flight together in the next statement, as a
/// database groups commits: a round trip to PostgreSQL costs the node and the server more than
/// the rows it carries. Used for token lookups (every authorize and introspect), whose requests
/// are independent reads. (Grouping challenge inserts the same way was measured and dropped: it
/// cost refreshes about 10 % on this machine, docs/BENCHMARKS.md.)
///
/// Nothing is cached or delayed: a request joins only a group whose statement has not been sent
/// yet, so every answer comes from a statement that started after its request arrived (and sees
/// whatever committed before, a revocation included). At most `concurrency` statements are in
/// flight; a request that finds one of those turns free is sent at once, alone.
final class PostgresStatementGroups<Request: Sendable, Answer: Sendable>: Sendable {
    /// Answers `requests` (in their order, one answer each) with one statement.
    typealias Run = @Sendable (_ requests: [Request]) throws(StorageError) -> [Answer]

    /// One caller's request, parked until its group's statement has answered.
    private final class Waiter: @unchecked Sendable {
        // @unchecked: `outcome` and `leads` are written by one thread before `wake.signal()`
        // and read by the waiter after `wake.wait()`; the semaphore orders the two.
        let request: Request
        let wake = DispatchSemaphore(value: 0)
        var outcome: Result<Answer, StorageError>?
        /// Set instead of `outcome` when the waiter is to send the next group itself.
        var leads = false

        init(_ request: Request) { self.request = request }
    }

    private struct State {
        var pending: [Waiter] = []
        var inFlight = 0
    }

    private let state = Mutex(State())
    private let concurrency: Int
    private let limit: Int
    private let run: Run

    /// `concurrency`: statements in flight at most; `limit`: requests in one statement at most.
    init(concurrency: Int, limit: Int = 64, run: @escaping Run) {
        self.concurrency = max(1, concurrency)
        self.limit = max(1, limit)
        self.run = run
    }

    /// Requests waiting for a turn (tests wait for a group to form).
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// The answer to `request`, from a statement sent after this call began.
    func submit(_ request: Request) throws(StorageError) -> Answer {
        let waiter = Waiter(request)
        // A request that finds a free turn is sent at once and never enters `pending`: a waiter is
        // in `pending`, in one group, or handed the turn, and only ever one of the three.
        let leads = state.withLock { state -> Bool in
            guard state.inFlight < concurrency else {
                state.pending.append(waiter)
                return false
            }
            state.inFlight += 1
            return true
        }
        if !leads {
            waiter.wake.wait()
        }
        if leads || waiter.leads {
            sendGroup(leader: waiter)
        }
        guard let outcome = waiter.outcome else { throw .misuse("a grouped statement left a request unanswered") }
        return try outcome.get()
    }

    /// Answers `leader` and the requests pending beside it with one statement, then hands the
    /// turn to the first request that arrived meanwhile, if any.
    private func sendGroup(leader: Waiter) {
        let group = state.withLock { state -> [Waiter] in
            let others = state.pending.prefix(limit - 1)
            state.pending.removeFirst(others.count)
            return [leader] + others
        }
        do throws(StorageError) {
            let answers = try run(group.map(\.request))
            guard answers.count == group.count else {
                throw .misuse("a grouped statement gave \(answers.count) answers to \(group.count) requests")
            }
            for (waiter, answer) in zip(group, answers) { waiter.outcome = .success(answer) }
        } catch {
            for waiter in group { waiter.outcome = .failure(error) }
        }
        let next = state.withLock { state -> Waiter? in
            guard !state.pending.isEmpty else {
                state.inFlight -= 1
                return nil
            }
            return state.pending.removeFirst()
        }
        if let next {
            next.leads = true
            next.wake.signal()
        }
        for waiter in group.dropFirst() { waiter.wake.signal() }
    }
}
