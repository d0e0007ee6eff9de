import AttestStorage
import AttestTesting
import Foundation
import Testing

/// The write-ahead log is checkpointed on a thread and connection of its own (`SQLiteCheckpointer`),
/// never by the commit of a request: SQLite's automatic checkpoint on the writer made a write
/// wait 120 ms behind a purge among ten million tokens.
@Suite("SQLite checkpoints off the writer")
struct SQLiteCheckpointTests {
    /// One row of 64 KiB: 17 pages of log per transaction.
    private static let fill = SQLStatement("INSERT OR REPLACE INTO rate_buckets (bucket, tokens, updated_at) VALUES (?, 0, 0)")
    /// SQLite's page plus its frame header in the log.
    private static let frameBytes = 4_096 + 24

    private func write(_ store: SQLiteTokenStore, rows: Range<Int>) throws {
        for row in rows {
            let bucket = "fill \(row) " + String(repeating: "x", count: 65_536)
            _ = try store.perform(.transaction(durable: true)) { session throws(StorageError) in try session.run(Self.fill, [.text(bucket)])
            }
        }
    }

    private func logBytes(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
    }

    @Test("no commit checkpoints: with the checkpointer held, the log grows past SQLite's automatic threshold")
    func commitsDoNotCheckpoint() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("held.sqlite")
        let store = try SQLiteTokenStore(path: path, migrateAt: 1_000)
        try store.holdingCheckpoints { () throws(StorageError) in
            do { try write(store, rows: 0..<100) } catch { throw .io("\(error)") }
        }
        // On the writer, SQLite would have checkpointed at 1,000 pages and restarted the log
        // from its beginning: the file would have stayed near 1,017 frames.
        #expect(try logBytes(path) > 1_600 * Self.frameBytes)
        #expect(store.checkpointsOffTheWriter == 0)
    }

    @Test("past the threshold the checkpointer copies the log, and the log restarts from its beginning")
    func checkpointerCopiesTheLog() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("copied.sqlite")
        let store = try SQLiteTokenStore(path: path, migrateAt: 1_000)
        // 1,190 pages of log while no checkpoint may run: the commit that passed 1,000 pages
        // scheduled one, which runs once let go, with nothing written meanwhile, so it copies
        // all of the log. The next writes then start again at the log's first frame, and the
        // file (as long as the log ever was) does not grow.
        try store.holdingCheckpoints { () throws(StorageError) in
            do { try write(store, rows: 0..<70) } catch { throw .io("\(error)") }
        }
        #expect(store.checkpointsOffTheWriter == 0)
        store.finishCheckpoints()
        #expect(store.checkpointsOffTheWriter == 1)
        let copied = try logBytes(path)
        try write(store, rows: 70..<120)
        #expect(try logBytes(path) <= copied, "the log did not restart: it was not all copied")
        // What the checkpoint copied is in the database: a fresh connection reads every row.
        let rows = try SQLiteDatabase(path: path, create: false).prepare("SELECT count(*) FROM rate_buckets WHERE bucket LIKE 'fill %'")
        #expect(try rows.step())
        #expect(rows.int64(at: 0) == 120)
    }

    @Test("a checkpointer that cannot keep up: past 4,000 pages the committing thread checkpoints the log itself, and it restarts")
    func writerCheckpointsPastFourTimesTheThreshold() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("behind.sqlite")
        let store = try SQLiteTokenStore(path: path, migrateAt: 1_000)
        // 5,100 pages while the checkpointer is held: without the writer's own checkpoint the
        // log would grow as long (writes that never pause would never let it restart).
        try store.holdingCheckpoints { () throws(StorageError) in
            do { try write(store, rows: 0..<300) } catch { throw .io("\(error)") }
        }
        #expect(try logBytes(path) <= (4_000 + 2 * 17) * Self.frameBytes)
    }
}

/// SQLite's purge deletes in short transactions: every write waits for each on the one writer,
/// and among ten million tokens a batch of 2,000 held it for 140 ms (docs/BENCHMARKS.md).
@Suite("SQLite purge: short transactions")
struct SQLitePurgeBatchTests {
    @Test("600 expired challenges are purged in three transactions of at most 256 rows")
    func shortBatches() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteTokenStore(path: directory.path("purge.sqlite"), migrateAt: 1_000)
        try store.insertIntegration(
            IntegrationRecord(
                clientID: "clid_purge", workspaceID: "ws", name: "App", teamID: "ABCDE12345", bundleIDs: ["com.example.a"],
                environments: [.production], status: .active, createdAt: 1_000, revokedAt: nil),
            audit: nil)
        for index in 0..<600 {
            let id = withUnsafeBytes(of: UInt64(index).bigEndian) { [UInt8]($0) } + [UInt8](repeating: 7, count: 24)
            #expect(try store.insertChallenge(id: id, clientID: "clid_purge", createdAt: 1_000, expiresAt: 1_010))
        }
        let before = store.groupCommitStatistics.groups
        #expect(try store.purgeExpired(at: 2_000) == 600)
        // Tokens (none: one transaction), challenges (256, 256, 88), then sessions and buckets.
        #expect(store.groupCommitStatistics.groups - before == 5)
    }
}
