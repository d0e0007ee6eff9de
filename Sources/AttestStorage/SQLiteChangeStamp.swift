internal import Glibc
import Synchronization

/// Whether a SQLite database in WAL mode has changed, told without a transaction: the header of
/// its write-ahead-log index (the `-shm` file every connection to it maps), read through one
/// connection's own mapping (never a descriptor of our own: closing one would drop every POSIX
/// lock this process holds on the file, SQLite's too, and let another process reset the index).
///
/// Every commit, by any connection of any process, rewrites that header (its change counter
/// `iChange`, the last valid frame, the salts and checksums) before the commit returns; a
/// checkpoint that restarts the log rewrites it too. Two equal readings therefore mean that
/// nothing committed in between. The layout is SQLite's file format
/// (https://www.sqlite.org/walformat.html, "the WAL-index header"): 48 bytes written twice, at
/// offsets 0 and 48, the second copy first; a reader that finds the two copies different caught
/// a writer in the middle and must not trust either (as SQLite's own `walIndexTryHdr`). Processes
/// built against different SQLite versions share this header, so it does not change between
/// versions.
///
/// Used to serve repeated token lookups from memory (`TokenLookupCache`): a cached answer is
/// used only while the header reads exactly as it did before that answer was read from the
/// database, so a revocation committed by attestctl in another process is seen at the very
/// next lookup.
final class SQLiteChangeStamp: @unchecked Sendable {
    // @unchecked: the header is only read here, through SQLite's own mapping, which stays put
    // while `connection` is open; `connection` is held only to keep it open, never used after init.

    /// One reading of the header: 48 bytes as six words.
    struct Stamp: Equatable, Sendable {
        let a: UInt64, b: UInt64, c: UInt64, d: UInt64, e: UInt64, f: UInt64
    }

    private let base: UnsafeRawPointer
    /// The connection whose mapping `base` is; kept open for as long as this object lives.
    private let connection: SQLiteDatabase
    private static let headerBytes = 48

    /// The header as `database` maps it (call before any other thread uses `database`); nil
    /// when it has no write-ahead-log index (a database not in WAL mode): then nothing may be cached.
    init?(_ database: SQLiteDatabase) {
        guard let base = database.walIndex() else { return nil }
        self.base = base
        connection = database
    }

    /// The header now, or nil while a writer is rewriting it.
    func current() -> Stamp? {
        let first = read(at: 0)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        let second = read(at: Self.headerBytes)
        return first == second ? first : nil
    }

    private func read(at offset: Int) -> Stamp {
        func word(_ index: Int) -> UInt64 { base.load(fromByteOffset: offset + 8 * index, as: UInt64.self) }
        return Stamp(a: word(0), b: word(1), c: word(2), d: word(3), e: word(4), f: word(5))
    }
}

/// Token lookups answered from memory while the database has not changed (`SQLiteChangeStamp`).
///
/// An answer is stored with the stamp read before its lookup began, and only when the stamp was
/// the same after the lookup (nothing committed while it ran); it is served only while the stamp
/// still reads the same and the token has not expired. Any commit (a revocation, a suspension, a
/// block, but also a refresh or the purge) makes every stored answer stale at once: the next
/// lookup of each token goes to the database again. Only found tokens are stored (an unknown
/// token costs an attacker a database lookup each time, as before), at most `limit` of them.
final class TokenLookupCache: Sendable {
    private struct Entry {
        let record: TokenRecord
        let stamp: SQLiteChangeStamp.Stamp
    }

    private final class Shard: Sendable {
        let entries = Mutex<[[UInt8]: Entry]>([:])
    }

    private let stamps: SQLiteChangeStamp
    private let shards = (0..<16).map { _ in Shard() }
    private let perShard: Int
    /// Lookups answered from memory since start (for tests).
    let hits = Atomic<Int>(0)

    /// The calling thread's shard: every worker keeps its own answers (a gateway checks one hot
    /// token from every worker at once, and one lock for it made the workers queue: with 8
    /// workers on 2 cores some runs spent 2.5 times the CPU per request).
    private var threadShard: Shard { shards[ThreadShard.index(among: shards.count)] }

    init(stamps: SQLiteChangeStamp, limit: Int = 16_384) {
        self.stamps = stamps
        perShard = max(1, limit / 16)
    }

    /// The token's record: from memory when the database has not changed since it was read,
    /// otherwise from `lookup` (and stored when nothing committed while it ran).
    func activeToken(
        hash: [UInt8], at time: Int64, lookup: () throws(StorageError) -> TokenRecord?
    ) throws(StorageError) -> TokenRecord? {
        guard let before = stamps.current() else { return try lookup() }
        let shard = threadShard
        if let entry = shard.entries.withLock({ $0[hash] }), entry.stamp == before, time < entry.record.expiresAt {
            hits.add(1, ordering: .relaxed)
            return entry.record
        }
        let record = try lookup()
        guard let record, stamps.current() == before else { return record }
        shard.entries.withLock { entries in
            if entries.count >= perShard { entries.removeAll(keepingCapacity: true) }
            entries[hash] = Entry(record: record, stamp: before)
        }
        return record
    }
}
