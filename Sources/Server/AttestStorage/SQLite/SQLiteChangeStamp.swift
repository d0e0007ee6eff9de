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
final class SQLiteChangeStamp: AnswerStamps, @unchecked Sendable {
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
