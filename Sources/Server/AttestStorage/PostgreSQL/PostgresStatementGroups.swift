import Dispatch
internal import Glibc
import Synchronization

/// Runs requests that arrive while a statement is in flight together in the next statement, as a
/// database groups commits: a round trip to PostgreSQL costs the node and the server more than
/// the rows it carries. Used for token lookups (every authorize and introspect), whose requests
/// are independent reads. (Grouping challenge inserts the same way was measured and dropped: it
/// cost refreshes more than it saved, docs/BENCHMARKS.md.)
///
/// Nothing is cached: a request joins only a group whose statement has not been sent yet, so
/// every answer comes from a statement that started after its request arrived (and sees whatever
/// committed before, a revocation included). One statement is in flight at a time, sent by one
/// sender that takes every request pending (up to `limit`) when it starts it; a request that
/// finds no sender running starts one. (Two senders split the groups, and authorize ran slower
/// than with one, docs/BENCHMARKS.md.)
///
/// Requests are answered through a callback (`submit(_:then:)`), so that an HTTP worker can go
/// on serving other connections while its request waits; the sender runs on a serial queue of
/// its own and blocks on its round trips, never on an HTTP worker. (Not on Dispatch's global
/// queue: its threads are few, and callers that block them, Swift concurrency's tasks among
/// them, left lookups unsent for long stretches in RevocationUnderLoadTests.) `submit(_:)` waits for the
/// answer, for callers that have nothing else to do.
///
/// Requests wait in shards picked by the submitting thread, and the sender takes from every shard:
/// with one queue and one lock, the HTTP workers queued on it (a large share of authorize's CPU
/// on PostgreSQL went to waiting for that lock, docs/BENCHMARKS.md). Whether a sender runs is one
/// atomic flag; a sender that finds nothing pending clears it and looks once more, so that a
/// request queued meanwhile (whose submitter saw the flag still set) is never left unsent.
///
/// Under load the sender pauses briefly before taking the next group (`gatherPauseMicroseconds`,
/// after a group of at least `gatherAfter` requests that was not full), so that more requests
/// share the next statement, as PostgreSQL's own `commit_delay` waits for `commit_siblings`: a
/// light load (small groups) pays no delay, and a full group is followed at once.
final class PostgresStatementGroups<Request: Sendable, Answer: Sendable>: Sendable {
    /// Answers `requests` (in their order, one answer each) with one statement.
    typealias Run = @Sendable (_ requests: [Request]) throws(StorageError) -> [Answer]
    /// Receives one request's answer, on the sender's thread.
    typealias Reply = @Sendable (Result<Answer, StorageError>) -> Void

    private struct Entry {
        let request: Request
        let reply: Reply
    }

    /// Requests waiting for a statement, in shards by submitting thread.
    private final class Shard: Sendable {
        let pending = Mutex<[Entry]>([])
    }

    private let shards = (0..<16).map { _ in Shard() }
    /// Whether a sender is running (or about to).
    private let senderRunning = Atomic<Bool>(false)
    /// The shard the next group starts taking from, so that no shard waits behind the others.
    private let nextShard = Atomic<Int>(0)
    /// Requests in one statement at most.
    private let limit: Int
    private let run: Run
    /// Where the sender runs: one sender at a time, on a thread Dispatch gives this queue even
    /// when every thread of its global queue is blocked.
    private let senderQueue = DispatchQueue(label: "attestd.statement-groups")
    /// The pause under load: after a group of at least this many requests...
    private static var gatherAfter: Int { 8 }
    /// ...that was not full, the sender waits this long before taking the next (measured in
    /// docs/BENCHMARKS.md).
    private static var gatherPauseMicroseconds: UInt32 { 300 }

    /// Runs on the sender after it found nothing pending, before it clears `senderRunning` (tests
    /// queue a request in that moment).
    private let foundNothingPending: (@Sendable () -> Void)?

    /// `limit`: requests in one statement at most.
    init(limit: Int = 64, run: @escaping Run, foundNothingPending: (@Sendable () -> Void)? = nil) {
        self.limit = max(1, limit)
        self.run = run
        self.foundNothingPending = foundNothingPending
    }

    /// Requests waiting for a statement (tests wait for a group to form).
    var pendingCount: Int { shards.reduce(0) { count, shard in count + shard.pending.withLock { $0.count } } }

    /// Answers `request` through `reply`, exactly once, from a statement sent after this call
    /// began. `reply` runs on a sender's thread: it should hand the answer on, not work on it.
    func submit(_ request: Request, then reply: @escaping Reply) {
        threadShard.pending.withLock { $0.append(Entry(request: request, reply: reply)) }
        if senderRunning.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged {
            senderQueue.async { self.send() }
        }
    }

    /// The answer to `request`, from a statement sent after this call began; waits for it.
    func submit(_ request: Request) throws(StorageError) -> Answer {
        let answered = Answered<Answer>()
        submit(request) { answered.set($0) }
        return try answered.wait().get()
    }

    /// The sender: sends the pending requests, a group at a time, until none is left.
    private func send() {
        repeat {
            sendPending()
            foundNothingPending?()
            senderRunning.store(false, ordering: .sequentiallyConsistent)
            // A request queued after the last look, by a submitter that saw this sender running:
            // sent by this sender, unless a new one has started for it.
        } while pendingCount > 0
            && senderRunning.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
    }

    private func sendPending() {
        while let group = nextGroup() {
            let outcomes: [Result<Answer, StorageError>]
            do throws(StorageError) {
                let answers = try run(group.map(\.request))
                guard answers.count == group.count else {
                    throw .misuse("a grouped statement gave \(answers.count) answers to \(group.count) requests")
                }
                outcomes = answers.map { .success($0) }
            } catch {
                outcomes = Array(repeating: .failure(error), count: group.count)
            }
            for (entry, outcome) in zip(group, outcomes) { entry.reply(outcome) }
            if group.count >= Self.gatherAfter && group.count < limit { usleep(Self.gatherPauseMicroseconds) }
        }
    }

    /// The requests pending now (up to `limit`, from every shard in turn), or nil when there are none.
    private func nextGroup() -> [Entry]? {
        var group: [Entry] = []
        let first = nextShard.wrappingAdd(1, ordering: .relaxed).oldValue
        for offset in 0..<shards.count where group.count < limit {
            shards[(first &+ offset) % shards.count].pending.withLock { pending in
                let taken = min(pending.count, limit - group.count)
                guard taken > 0 else { return }
                group += pending.prefix(taken)
                pending.removeFirst(taken)
            }
        }
        return group.isEmpty ? nil : group
    }

    /// The calling thread's shard.
    private var threadShard: Shard { shards[ThreadShard.index(among: shards.count)] }
}

/// One answer handed from a sender's thread to a caller waiting for it.
private final class Answered<Answer: Sendable>: @unchecked Sendable {
    // @unchecked: `outcome` is written once before `done.signal()` and read after `done.wait()`.
    private let done = DispatchSemaphore(value: 0)
    private var outcome: Result<Answer, StorageError>?

    func set(_ outcome: Result<Answer, StorageError>) {
        self.outcome = outcome
        done.signal()
    }

    func wait() -> Result<Answer, StorageError> {
        done.wait()
        return outcome ?? .failure(.misuse("a grouped statement left a request unanswered"))
    }
}
