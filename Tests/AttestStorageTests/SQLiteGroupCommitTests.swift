import AttestTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AttestStorage

@Suite("SQLite group commit")
struct SQLiteGroupCommitTests {
    /// A database with a table of unique values, its writer connection and a group commit on it.
    final class World: @unchecked Sendable {
        let directory: TemporaryDirectory
        let writer: SQLiteTokenStore.Connection
        let commits: SQLiteGroupCommit
        let reader: SQLiteDatabase

        init() throws {
            directory = try TemporaryDirectory()
            let database = try SQLiteDatabase(path: directory.path("group.sqlite"))
            try database.immediateTransaction { try database.execute("CREATE TABLE t (v TEXT NOT NULL UNIQUE)") }
            writer = SQLiteTokenStore.Connection(database)
            commits = SQLiteGroupCommit(writer: writer)
            reader = try SQLiteDatabase(path: directory.path("group.sqlite"))
        }

        /// Inserts `value` through the group commit; the `PRAGMA synchronous` its transaction ran with.
        func insert(_ value: String, durable: Bool) -> Result<Int64, StorageError> {
            do throws(StorageError) {
                return .success(
                    try commits.run(durable: durable) { database throws(StorageError) -> Int64 in
                        try database.execute("INSERT INTO t (v) VALUES (?)", arguments: [.text(value)])
                        let statement = try database.cachedStatement("PRAGMA synchronous")
                        guard try statement.step(), case .integer(let level) = statement.value(at: 0) else {
                            throw .misuse("no PRAGMA synchronous")
                        }
                        return level
                    })
            } catch {
                return .failure(error)
            }
        }

        var values: Set<String> {
            var found: Set<String> = []
            guard let statement = try? reader.prepare("SELECT v FROM t") else { return found }
            while (try? statement.step()) == true, case .text(let value) = statement.value(at: 0) { found.insert(value) }
            return found
        }
    }

    @Test(
        "transactions that arrive during a commit share the next one; one that fails is rolled back alone; any durable member makes the group durable"
    )
    func groupsShareOneCommit() throws {
        let world = try World()
        // Hold the writer, so the first transaction's group waits for it and the rest queue up.
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        // Threads of their own: Dispatch's pool adds threads only slowly when all of them block.
        Thread {
            try? world.writer.use { _ throws(StorageError) in
                holding.signal()
                release.wait()
            }
        }.start()
        holding.wait()
        let outcomes = Mutex<[String: Result<Int64, StorageError>]>([:])
        let done = DispatchGroup()
        func start(_ label: String, value: String? = nil, durable: Bool) {
            done.enter()
            Thread {
                let outcome = world.insert(value ?? label, durable: durable)
                outcomes.withLock { $0[label] = outcome }
                done.leave()
            }.start()
        }
        start("lead", durable: false)
        #expect(eventually(within: 10) { world.commits.queue == (pending: 0, leading: true) }, "the leader took its group of one")
        start("durable", durable: true)
        for index in 0..<5 { start("member \(index)", durable: false) }
        start("duplicate", value: "lead", durable: false)  // fails on UNIQUE, alone
        #expect(eventually(within: 10) { world.commits.queue.pending == 7 })
        release.signal()
        #expect(done.wait(timeout: .now() + 10) == .success)

        let results = outcomes.withLock { $0 }
        #expect(world.commits.statistics == (groups: 2, members: 8))
        #expect(world.values == Set(["lead", "durable"] + (0..<5).map { "member \($0)" }))
        // The leader's group had no durable member: NORMAL (1); the second had one: FULL (2).
        #expect((try? results["lead"]?.get()) == 1)
        #expect((0..<5).allSatisfy { (try? results["member \($0)"]?.get()) == 2 })
        guard case .failure(let error) = results["duplicate"] else {
            Issue.record("the duplicate committed")
            return
        }
        #expect(error.code == .constraint)
        #expect(results.values.filter { if case .failure = $0 { true } else { false } }.count == 1)
    }

    @Test("one caller alone commits at once, in a group of its own, with its own durability")
    func alone() throws {
        let world = try World()
        #expect((try? world.insert("a", durable: false).get()) == 1)
        #expect((try? world.insert("b", durable: true).get()) == 2)
        #expect(world.commits.statistics == (groups: 2, members: 2))
        #expect(world.values == ["a", "b"])
        #expect(world.commits.queue == (pending: 0, leading: false))
    }
}
