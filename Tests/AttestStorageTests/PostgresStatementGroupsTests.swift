import AttestTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AttestStorage

/// The grouping of concurrent requests into one PostgreSQL statement, driven here with token
/// lookups through a stand-in statement (the real statements run against a real server in the
/// contract suite).
@Suite("PostgreSQL statement groups: requests that arrive together share one statement, never an earlier one")
struct PostgresStatementGroupsTests {
    typealias Lookups = PostgresStatementGroups<[UInt8], TokenRecord?>

    /// Stands in for the tokens table and records each statement; the first statement waits
    /// for `release` so that later lookups queue behind it.
    final class Table: Sendable {
        let rows: Mutex<[[UInt8]: TokenRecord]>
        /// The requests of each statement, in order.
        let statements = Mutex<[[[UInt8]]]>([])
        let failing = Mutex<Set<[UInt8]>>([])
        let release = DispatchSemaphore(value: 0)

        init(_ tokens: [TokenRecord]) { rows = Mutex(Dictionary(uniqueKeysWithValues: tokens.map { ($0.tokenHash, $0) })) }

        func run(_ hashes: [[UInt8]]) throws(StorageError) -> [TokenRecord?] {
            let count = statements.withLock { statements in
                statements.append(hashes)
                return statements.count
            }
            let rows = rows.withLock { $0 }  // the statement's snapshot, taken when it starts
            if count == 1 { release.wait() }
            if !failing.withLock({ $0.isDisjoint(with: hashes) }) { throw .unavailable("the server went away") }
            return hashes.map { rows[$0] }
        }

        var statementCount: Int { statements.withLock { $0.count } }
    }

    static func token(_ byte: UInt8, expiresAt: Int64 = 10_000) -> TokenRecord {
        TokenRecord(
            tokenHash: [UInt8](repeating: byte, count: 32), clientID: "clid_\(byte)", workspaceID: "ws", keyID: [byte], scope: "messages",
            issuedAt: 0, expiresAt: expiresAt)
    }

    /// Runs `lookup` on its own thread; the answer is read with `wait`.
    final class Pending: @unchecked Sendable {
        // @unchecked: `outcome` is written before `done.signal()` and read after `done.wait()`.
        private let done = DispatchSemaphore(value: 0)
        private var outcome: Result<TokenRecord?, StorageError> = .success(nil)

        init(_ lookups: Lookups, _ hash: [UInt8]) {
            Thread.detachNewThread {
                do throws(StorageError) {
                    self.outcome = .success(try lookups.submit(hash))
                } catch {
                    self.outcome = .failure(error)
                }
                self.done.signal()
            }
        }

        func wait() -> Result<TokenRecord?, StorageError> {
            done.wait()
            return outcome
        }
    }

    static func waitUntil(_ condition: () -> Bool) {
        _ = eventually(within: 10, condition)
    }

    @Test("lookups that arrive while one is in flight go together in the next statement, each with its own answer")
    func grouping() throws {
        let table = Table([Self.token(1), Self.token(2)])
        let lookups = Lookups(run: table.run)
        let first = Pending(lookups, Self.token(1).tokenHash)
        Self.waitUntil { table.statementCount == 1 }
        let queued = [1, 2, 1, 3].map { Pending(lookups, [UInt8](repeating: $0, count: 32)) }
        Self.waitUntil { lookups.pendingCount == 4 }
        #expect(lookups.pendingCount == 4)
        table.release.signal()
        #expect(try first.wait().get() == Self.token(1))
        let answers = try queued.map { try $0.wait().get() }
        #expect(answers == [Self.token(1), Self.token(2), Self.token(1), nil])
        let statements = table.statements.withLock { $0 }
        #expect(statements.count == 2)
        // All four in one statement (the threads queue in any order).
        #expect(statements.last?.map { $0[0] }.sorted() == [1, 1, 2, 3])
    }

    @Test("many threads submitting at once: every request answered once, no statement over the limit, none left unsent")
    func manySubmitters() {
        let statementSizes = Mutex<[Int]>([])
        let groups = PostgresStatementGroups<Int, Int>(limit: 4) { (requests: [Int]) throws(StorageError) -> [Int] in
            statementSizes.withLock { $0.append(requests.count) }
            return requests.map { $0 * 2 }
        }
        let threads = 8
        let perThread = 3_000
        let answered = Mutex<[Int: Int]>([:])
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            Thread.detachNewThread {
                for number in 0..<perThread {
                    let request = thread * perThread + number
                    groups.submit(request) { outcome in
                        answered.withLock { $0[request, default: 0] += (try? outcome.get()) == request * 2 ? 1 : 1_000 }
                    }
                }
                done.leave()
            }
        }
        done.wait()
        _ = eventually(within: 20) { answered.withLock { $0.count } >= threads * perThread }
        let answers = answered.withLock { $0 }
        #expect(answers.count == threads * perThread)
        #expect(answers.values.allSatisfy { $0 == 1 })
        #expect(statementSizes.withLock { $0 }.allSatisfy { (1...4).contains($0) })
        #expect(groups.pendingCount == 0)
    }

    @Test("a request queued just as the sender finds nothing pending (its submitter sees the sender running) is still sent")
    func queuedAsTheSenderStops() {
        let queuedLate = Mutex(false)
        let late = DispatchSemaphore(value: 0)
        let groupsBox = Mutex<PostgresStatementGroups<Int, Int>?>(nil)
        let groups = PostgresStatementGroups<Int, Int>(
            limit: 4, run: { (requests: [Int]) throws(StorageError) -> [Int] in requests },
            foundNothingPending: {
                // Once: another thread queues a request now, while this sender still counts as running.
                guard !queuedLate.withLock({ $0 }), let groups = groupsBox.withLock({ $0 }) else { return }
                queuedLate.withLock { $0 = true }
                let queued = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    groups.submit(2) { _ in late.signal() }
                    queued.signal()
                }
                queued.wait()
            })
        groupsBox.withLock { $0 = groups }
        let first = DispatchSemaphore(value: 0)
        groups.submit(1) { _ in first.signal() }
        #expect(first.wait(timeout: .now() + 5) == .success)
        #expect(late.wait(timeout: .now() + 5) == .success)
        #expect(groups.pendingCount == 0)
    }

    @Test("a lookup never shares a statement sent before it arrived: a revocation committed meanwhile is seen")
    func noEarlierStatement() throws {
        let table = Table([Self.token(1)])
        let lookups = Lookups(run: table.run)
        let before = Pending(lookups, Self.token(1).tokenHash)
        Self.waitUntil { table.statementCount == 1 }
        table.rows.withLock { $0 = [:] }  // revoked while the first statement is in flight
        let after = Pending(lookups, Self.token(1).tokenHash)
        Self.waitUntil { lookups.pendingCount == 1 }
        table.release.signal()
        #expect(try before.wait().get() == Self.token(1))
        #expect(try after.wait().get() == nil)
        #expect(table.statementCount == 2)
    }

    @Test("a failed statement fails every lookup of its group, and the next lookup gets a turn")
    func failure() throws {
        let table = Table([Self.token(1), Self.token(2)])
        table.failing.withLock { $0 = [Self.token(2).tokenHash] }
        let lookups = Lookups(run: table.run)
        let first = Pending(lookups, Self.token(1).tokenHash)
        Self.waitUntil { table.statementCount == 1 }
        let group = [Pending(lookups, Self.token(1).tokenHash), Pending(lookups, Self.token(2).tokenHash)]
        Self.waitUntil { lookups.pendingCount == 2 }
        table.release.signal()
        #expect(try first.wait().get() == Self.token(1))
        for pending in group {
            #expect(throws: StorageError.self) { try pending.wait().get() }
        }
        #expect(try lookups.submit(Self.token(1).tokenHash) == Self.token(1))
        #expect(table.statementCount == 3)
    }

    @Test("a lookup with a callback returns at once; the answer comes through the callback once the statement has run")
    func callback() throws {
        let table = Table([Self.token(1)])
        let lookups = Lookups(run: table.run)
        let answered = DispatchSemaphore(value: 0)
        let answer = Mutex<Result<TokenRecord?, StorageError>?>(nil)
        lookups.submit(Self.token(1).tokenHash) { outcome in
            answer.withLock { $0 = outcome }
            answered.signal()
        }
        // Returned while the statement is held: nothing answered yet.
        Self.waitUntil { table.statementCount == 1 }
        #expect(answer.withLock { $0 } == nil)
        table.release.signal()
        #expect(answered.wait(timeout: .now() + 10) == .success)
        #expect(try answer.withLock { $0 }?.get() == Self.token(1))
    }

    @Test("the sender runs while every thread of Dispatch's global queue is blocked (as Swift concurrency's tasks can block it)")
    func senderHasItsOwnThread() throws {
        let table = Table([Self.token(1)])
        table.release.signal()  // the first statement is not held
        let lookups = Lookups(run: table.run)
        let hold = DispatchSemaphore(value: 0)
        let busy = 16
        // Held far longer than the answer may take (released at once by the defer): a sender on
        // the global queue would wait behind all sixteen, while Dispatch adds threads slowly.
        for _ in 0..<busy { DispatchQueue.global().async { _ = hold.wait(timeout: .now() + 30) } }
        defer { for _ in 0..<busy { hold.signal() } }
        let answered = DispatchSemaphore(value: 0)
        lookups.submit(Self.token(1).tokenHash) { _ in answered.signal() }
        #expect(answered.wait(timeout: .now() + 5) == .success, "the lookup waited for a thread of the global queue")
    }

    @Test("token lookups in one statement: each caller's own time decides expiry, and a hash asked twice is answered twice")
    func ownTime() {
        let lookups = [(1, 999), (1, 1000), (2, 1000), (1, 999), (3, 5)].map {
            PostgresTokenStore.TokenLookup(hash: Self.token(UInt8($0.0)).tokenHash, time: Int64($0.1))
        }
        let first = PostgresTokenStore.FoundToken(record: Self.token(1, expiresAt: 1000), keepable: true)
        let second = PostgresTokenStore.FoundToken(record: Self.token(2), keepable: false)
        #expect(PostgresTokenStore.answers(to: lookups, among: [first, second]) == [first, nil, second, first, nil])
    }
}
