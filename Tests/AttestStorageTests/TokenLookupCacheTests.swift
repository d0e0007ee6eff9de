import Foundation
import Synchronization
import Testing

@testable import AttestStorage

@Suite("Token lookups from memory while SQLite has not changed")
struct TokenLookupCacheTests {
    /// A WAL database with one table, a second connection to it, and the stamp of its log index.
    final class World {
        let directory: TemporaryDirectory
        let path: String
        let first: SQLiteDatabase
        let second: SQLiteDatabase
        let stamps: SQLiteChangeStamp

        init() throws {
            directory = try TemporaryDirectory()
            path = directory.path("cache.sqlite")
            let first = try SQLiteDatabase(path: path)
            try first.immediateTransaction { try first.execute("CREATE TABLE t (v INTEGER)") }
            self.first = first
            second = try SQLiteDatabase(path: path)
            stamps = try #require(SQLiteChangeStamp(first))
        }

        /// Commits one row through `database`.
        func commit(_ database: SQLiteDatabase) throws {
            try database.immediateTransaction { try database.execute("INSERT INTO t (v) VALUES (1)") }
        }
    }

    static let record = TokenRecord(
        tokenHash: Array(repeating: 7, count: 32), clientID: "clid_x", workspaceID: "ws", keyID: Array(repeating: 1, count: 32),
        scope: "messages", issuedAt: 1_000, expiresAt: 4_600)

    @Test("the stamp stays while nothing commits and changes with every commit, by this process or another")
    func stampChanges() throws {
        let world = try World()
        let before = try #require(world.stamps.current())
        #expect(world.stamps.current() == before)
        _ = try world.second.cachedStatement("SELECT count(*) FROM t").step()  // a read changes nothing
        #expect(world.stamps.current() == before)
        try world.commit(world.second)
        let afterOwn = try #require(world.stamps.current())
        #expect(afterOwn != before)
        // Another process (the sqlite3 shell, as attestctl would be) commits.
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = [world.path, "INSERT INTO t (v) VALUES (2);"]
        try shell.run()
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0)
        #expect(world.stamps.current() != afterOwn)
    }

    @Test("this process keeps SQLite's lock on the index once the stamp maps it, so no other process resets it")
    func keepsTheLock() throws {
        let world = try World()
        _ = world.stamps.current()
        // Another process asks whether it could write-lock the DMS byte of the -shm file (offset
        // 128: SQLite's unix VFS); SQLite's connections here hold it read-locked while they live.
        // (Had this process opened and closed a descriptor of its own on the file, POSIX would
        // have dropped all of its locks there, and the next process to open the database would
        // have reset the index under it: found as a SIGBUS under load.)
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        probe.arguments = [
            "python3", "-c",
            "import fcntl, os, struct, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
                + "r = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack('hhqqi4x', fcntl.F_WRLCK, 0, 128, 1, 0)); "
                + "print(struct.unpack('hhqqi4x', r)[0] == fcntl.F_RDLCK)",
            world.path + "-shm",
        ]
        let output = Pipe()
        probe.standardOutput = output
        try probe.run()
        probe.waitUntilExit()
        let answer = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(answer.trimmingCharacters(in: .whitespacesAndNewlines) == "True")
    }

    @Test("other processes opening and committing while the stamp is read leave this process's index intact")
    func otherProcessesKeepTheIndex() throws {
        let world = try World()
        for value in 1...3 {
            // Each shell opens the database, commits and closes. Had this process lost its locks on
            // the -shm file, the first would reset the index and this process would die of SIGBUS.
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
            shell.arguments = [world.path, "INSERT INTO t (v) VALUES (\(value));"]
            try shell.run()
            shell.waitUntilExit()
            #expect(shell.terminationStatus == 0)
            let before = try #require(world.stamps.current())
            try world.commit(world.second)
            #expect(world.stamps.current() != before)
        }
        let count = try world.first.cachedStatement("SELECT count(*) FROM t")
        #expect(try count.step())
        #expect(count.value(at: 0) == .integer(6))
    }

    @Test("a found token is served from memory until any commit or its expiry, then looked up again")
    func servesUntilChange() throws {
        let world = try World()
        let cache = TokenLookupCache(stamps: world.stamps)
        let lookups = Mutex(0)
        func lookUp(at time: Int64 = 2_000) throws -> TokenRecord? {
            try cache.activeToken(hash: Self.record.tokenHash, at: time) { () throws(StorageError) -> TokenRecord? in
                lookups.withLock { $0 += 1 }
                return Self.record
            }
        }
        #expect(try lookUp() == Self.record)
        #expect(try lookUp() == Self.record)
        #expect(lookups.withLock { $0 } == 1, "the second lookup came from memory")
        try world.commit(world.second)  // e.g. attestctl token revoke
        _ = try lookUp()
        #expect(lookups.withLock { $0 } == 2, "a commit sends the next lookup to the database")
        _ = try lookUp(at: Self.record.expiresAt)
        #expect(lookups.withLock { $0 } == 3, "an expired token is never served from memory")
        #expect(cache.hits.load(ordering: .relaxed) == 1)
    }

    @Test("an answer read while something committed is not kept, and an unknown token never is")
    func notKept() throws {
        let world = try World()
        let cache = TokenLookupCache(stamps: world.stamps)
        let lookups = Mutex(0)
        for _ in 0..<2 {
            _ = try cache.activeToken(hash: Self.record.tokenHash, at: 2_000) { () throws(StorageError) -> TokenRecord? in
                lookups.withLock { $0 += 1 }
                try? world.commit(world.second)  // a revocation racing the lookup
                return Self.record
            }
        }
        #expect(lookups.withLock { $0 } == 2)
        for _ in 0..<2 {
            _ = try cache.activeToken(hash: [1, 2, 3], at: 2_000) { () throws(StorageError) -> TokenRecord? in
                lookups.withLock { $0 += 1 }
                return nil
            }
        }
        #expect(lookups.withLock { $0 } == 4)
    }
}
