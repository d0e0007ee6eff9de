import Dispatch
import Synchronization

/// Checkpoints a store's write-ahead log on a thread and a connection of its own, so that no
/// request's commit waits for one.
///
/// SQLite's automatic checkpoint runs on the connection that commits, once the log passes 1,000
/// pages, while that commit's caller waits: with one writer, every write behind it waits too.
/// On a large database the checkpoint copies pages to places all over the file and flushes it,
/// and a request's write waits for all of it (docs/BENCHMARKS.md). SQLite's documentation gives
/// the remedy: turn the automatic checkpoint off and run checkpoints on another thread
/// (https://www.sqlite.org/wal.html, "Application-Initiated Checkpoints"). A passive checkpoint
/// takes no lock a writer needs, so writers go on beside it, and the log restarts from its
/// beginning at the first write after a checkpoint that copied all of it, as before.
///
/// Under writes that never pause, a checkpoint beside them never copies all of the log (new
/// frames arrive while it runs), so the log would not restart and each checkpoint would flush the
/// database file again for a few frames, which costs refreshes a good part of their rate
/// (docs/BENCHMARKS.md). So one checkpoint is scheduled per threshold of growth, and past four
/// times the threshold the commit that finds the log that long checkpoints it itself, as SQLite
/// did: most of the log is copied by then, so that checkpoint is short, and the log restarts at
/// the next write.
///
/// Durability is the same: a commit is durable once its frames are in the flushed log, and the
/// checkpoint flushes the database file before it marks frames copied.
final class SQLiteCheckpointer: Sendable {
    /// The log's size in pages that starts a checkpoint: SQLite's own default
    /// (`wal_autocheckpoint`).
    static let threshold = 1_000
    /// The log's size in pages past which the committing thread checkpoints it itself.
    static let writerThreshold = 4 * threshold

    private let connection: SQLiteTokenStore.Connection
    private let queue = DispatchQueue(label: "attestd.sqlite.checkpoint", qos: .utility)
    /// True from a checkpoint's scheduling until it starts: commits in between add none.
    private let scheduled = Atomic<Bool>(false)
    /// The log's pages when the last checkpoint was scheduled: the next waits for as many more.
    /// Read and written only by the writer's commits, one at a time.
    private let scheduledAt = Atomic<Int>(0)
    private let completed = Atomic<Int>(0)

    /// Opens the checkpoint's own connection to the database at `path` (which exists).
    init(path: String, busyTimeout: Duration) throws(StorageError) {
        connection = SQLiteTokenStore.Connection(try SQLiteDatabase(path: path, busyTimeout: busyTimeout, create: false))
    }

    /// Installs the checkpointer in place of `writer`'s automatic checkpoint.
    func attach(to writer: SQLiteDatabase) {
        writer.onCommit { [weak self] pages in
            self?.logGrew(to: pages)
            return pages >= Self.writerThreshold
        }
    }

    /// A commit left `pages` pages in the log: each time it has grown by the threshold, one
    /// checkpoint is scheduled unless one is already waiting to start (the commit's thread only
    /// flips a flag). A checkpoint after every commit would flush the database file for a few
    /// frames each time.
    func logGrew(to pages: Int) {
        // A shorter log than at the last scheduling: it restarted.
        if pages < scheduledAt.load(ordering: .relaxed) { scheduledAt.store(0, ordering: .relaxed) }
        guard pages - scheduledAt.load(ordering: .relaxed) >= Self.threshold,
            scheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        scheduledAt.store(pages, ordering: .relaxed)
        queue.async { [weak self] in
            guard let self else { return }
            scheduled.store(false, ordering: .releasing)
            // A failure changes nothing (SQLite's automatic checkpoint ignores it too): the log
            // keeps its frames for the next checkpoint, here or the writer's own.
            if (try? connection.use({ database throws(StorageError) in try database.checkpointPassively() })) != nil {
                completed.add(1, ordering: .relaxed)
            }
        }
    }

    /// Passive checkpoints completed since the store opened (for tests).
    var checkpoints: Int { completed.load(ordering: .relaxed) }

    /// Returns once every checkpoint scheduled so far has run (for tests).
    func drain() { queue.sync {} }

    /// Runs `body` while no checkpoint runs or starts here (checkpoints scheduled meanwhile wait).
    func holding<T: Sendable>(_ body: () throws(StorageError) -> T) throws(StorageError) -> T {
        try connection.use { _ throws(StorageError) -> T in try body() }
    }
}
