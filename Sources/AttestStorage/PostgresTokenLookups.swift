import Dispatch
import Synchronization

/// Answers concurrent token lookups (every authorize and introspect) with one statement per
/// group, as a database groups commits: a round trip to PostgreSQL costs more than the index
/// lookups it carries, so lookups that arrive while one is in flight wait for it to return and
/// then go together.
///
/// Nothing is cached: a lookup joins only a group whose statement has not been sent yet, so every
/// answer comes from a statement that started after the request arrived, and sees any revocation
/// committed before it (the guarantee `integration revoke` makes to every node). At most
/// `concurrency` statements are in flight; an idle store sends a lookup at once, with no delay.
final class PostgresTokenLookups: Sendable {
    /// One caller's lookup, parked until its group's statement has answered.
    private final class Waiter: @unchecked Sendable {
        // @unchecked: `outcome` and `leads` are written by one thread before `wake.signal()`
        // and read by the waiter after `wake.wait()`; the semaphore orders the two.
        let hash: [UInt8]
        let time: Int64
        let wake = DispatchSemaphore(value: 0)
        var outcome: Result<TokenRecord?, StorageError> = .success(nil)
        /// Set instead of `outcome` when the waiter is to send the next group itself.
        var leads = false

        init(hash: [UInt8], time: Int64) {
            self.hash = hash
            self.time = time
        }
    }

    private struct State {
        var pending: [Waiter] = []
        var inFlight = 0
    }

    /// Lookups in one statement at most (the array parameter stays small).
    static let groupLimit = 64

    private let state = Mutex(State())
    private let concurrency: Int
    private let run: @Sendable ([[UInt8]], Int64) throws(StorageError) -> [TokenRecord]

    /// `run(hashes, time)` returns the active tokens among `hashes` (distinct) that expire after `time`.
    init(concurrency: Int, run: @escaping @Sendable ([[UInt8]], Int64) throws(StorageError) -> [TokenRecord]) {
        self.concurrency = max(1, concurrency)
        self.run = run
    }

    /// Lookups waiting for a turn (tests wait for a group to form).
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// The active token with this hash, unexpired at `time`; nil when there is none.
    func activeToken(hash: [UInt8], at time: Int64) throws(StorageError) -> TokenRecord? {
        let waiter = Waiter(hash: hash, time: time)
        // A lookup that finds a free turn sends at once and never enters `pending`: a waiter is
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
            guard waiter.leads else { return try waiter.outcome.get() }
        }
        sendGroup(leader: waiter)
        return try waiter.outcome.get()
    }

    /// Answers `leader` and the lookups pending beside it with one statement, then hands the
    /// turn to the first lookup that arrived meanwhile, if any.
    private func sendGroup(leader: Waiter) {
        let group = state.withLock { state -> [Waiter] in
            let others = state.pending.prefix(Self.groupLimit - 1)
            state.pending.removeFirst(others.count)
            return [leader] + others
        }
        let outcome: Result<[TokenRecord], StorageError>
        do throws(StorageError) {
            let hashes = Array(Set(group.map(\.hash)))
            outcome = .success(try run(hashes, group.map(\.time).min() ?? 0))
        } catch {
            outcome = .failure(error)
        }
        switch outcome {
        case .success(let tokens):
            let byHash = Dictionary(tokens.map { ($0.tokenHash, $0) }, uniquingKeysWith: { first, _ in first })
            // Each caller's own time decides: a token that expires between two callers' seconds
            // is answered for each as if looked up alone.
            for waiter in group { waiter.outcome = .success(byHash[waiter.hash].flatMap { $0.expiresAt > waiter.time ? $0 : nil }) }
        case .failure(let error):
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
