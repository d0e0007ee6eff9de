import Dispatch
import Synchronization

/// Write transactions on the SQLite writer, run in groups that share one commit (and one flush),
/// as databases group commits: with `synchronous=FULL` every commit waits for the disk, so
/// requests that arrive while one commit is being flushed commit together in the next.
///
/// Leader-based, as RocksDB's write groups: a caller that finds no group running leads, taking
/// every transaction queued (up to `limit`) into one `BEGIN IMMEDIATE ... COMMIT`, each inside its
/// own savepoint, and leads again while more are queued; the others wait for their outcome. A
/// transaction that fails is rolled back to its savepoint and reported to its caller alone; the
/// others in the group still commit. When the group itself fails (BEGIN or COMMIT, or an error
/// after which SQLite rolled the whole transaction back, such as a full disk), every member gets
/// that failure and none of them is written. Nothing is acknowledged before the group's commit
/// returns, so an answer still means the write is on disk.
///
/// A group commits with `synchronous=FULL` when any member is durable, else with `NORMAL`.
final class SQLiteGroupCommit: Sendable {
    /// One queued transaction: runs in the group's transaction, and hears how the group ended.
    private final class Member: @unchecked Sendable {
        // @unchecked: `body` is taken and run on the leader's thread while its caller waits on
        // `done`; `outcome` is written before `done.signal()` and read after `done.wait()`.
        private var body: ((SQLiteDatabase) throws(StorageError) -> Void)?
        let durable: Bool
        private let done = DispatchSemaphore(value: 0)
        private var outcome: StorageError??

        init(durable: Bool, body: @escaping (SQLiteDatabase) throws(StorageError) -> Void) {
            self.durable = durable
            self.body = body
        }

        /// The body, once: the leader drops it before the caller returns, as the caller's closure
        /// must not outlive its call (`withoutActuallyEscaping`).
        func takeBody() -> (SQLiteDatabase) throws(StorageError) -> Void {
            defer { body = nil }
            if let body { return body }
            return Self.ranTwice
        }

        private static func ranTwice(_: SQLiteDatabase) throws(StorageError) {
            throw .misuse("a group commit ran a transaction twice")
        }

        func finish(_ error: StorageError?) {
            outcome = .some(error)
            done.signal()
        }

        /// Waits for the group's end: nil when this member's writes committed.
        func wait() -> StorageError? {
            done.wait()
            return outcome ?? .misuse("a group commit left a transaction unanswered")
        }
    }

    private let state = Mutex(GroupQueue<Member>())
    private let limit: Int
    /// The writer connection, whose lock a group holds for its transaction.
    private let writer: SQLiteTokenStore.Connection
    /// Groups committed and transactions in them since start (for tests and the benchmark).
    private let counts = Mutex((groups: 0, members: 0))

    init(limit: Int = 64, writer: SQLiteTokenStore.Connection) {
        self.limit = max(1, limit)
        self.writer = writer
    }

    /// Transactions queued for the next group, and whether a leader is running (for tests).
    var queue: (pending: Int, leading: Bool) { state.withLock { ($0.count, $0.running) } }

    /// Groups committed and the transactions they carried, since start.
    var statistics: (groups: Int, members: Int) { counts.withLock { $0 } }

    /// Runs `body` in a group's transaction and returns its value once the group has committed.
    func run<T: Sendable>(durable: Bool, _ body: (SQLiteDatabase) throws(StorageError) -> T) throws(StorageError) -> T {
        try withoutActuallyEscaping(body) { body throws(StorageError) -> T in
            // Written by the leader's thread before the member is finished, read here after.
            let result = ResultBox<T>()
            let member = Member(durable: durable) { database throws(StorageError) in result.value = try body(database) }
            let leads = state.withLock { $0.add(member) }
            if leads { lead() }
            if let error = member.wait() { throw error }
            guard let value = result.value else { throw .misuse("a group commit finished a transaction without its value") }
            return value
        }
    }

    /// Commits groups until none is queued.
    private func lead() {
        while let group = nextGroup() {
            commit(group)
        }
    }

    private func nextGroup() -> [Member]? {
        state.withLock { $0.nextGroup(limit: limit) }
    }

    private func commit(_ group: [Member]) {
        let outcome = transact(group)
        if case .success = outcome {
            counts.withLock {
                $0.groups += 1
                $0.members += group.count
            }
        }
        for (index, member) in group.enumerated() {
            switch outcome {
            case .success(let failures): member.finish(failures[index])
            case .failure(let error): member.finish(error)
            }
        }
    }

    /// Runs the group's transaction: each member's failure (nil when it committed), or the
    /// group's. The members' bodies are released when it returns.
    private func transact(_ group: [Member]) -> Result<[StorageError?], StorageError> {
        let bodies = group.map { $0.takeBody() }
        var failures = [StorageError?](repeating: nil, count: group.count)
        do throws(StorageError) {
            try writer.use { database throws(StorageError) in
                let durable = group.contains { $0.durable }
                if !durable { try database.execute("PRAGMA synchronous=NORMAL") }
                defer { if !durable { try? database.execute("PRAGMA synchronous=FULL") } }
                try database.groupTransaction(bodies, failures: &failures)
            }
            return .success(failures)
        } catch {
            return .failure(error)
        }
    }
}

/// A transaction's value, handed from the leader's thread to its caller.
private final class ResultBox<T>: @unchecked Sendable {
    // @unchecked: written on the leader's thread before the member's semaphore is signalled, read
    // by the caller after waiting on it.
    var value: T?
}
