import Synchronization

/// What says whether answers kept in memory may still be served: SQLite's change stamp (any
/// commit changes it), PostgreSQL's answer lease (the epoch a revocation raises).
protocol AnswerStamps: Sendable {
    associatedtype Stamp: Equatable & Sendable
    /// The stamp now, or nil when nothing may be served from memory or kept.
    func current() -> Stamp?
}

/// Token lookups answered from memory while the stamp has not changed (`AnswerStamps`).
///
/// An answer is stored with the stamp read before its lookup began, and only when the stamp was
/// the same after the lookup (nothing retired it while it ran); it is served only while the stamp
/// still reads the same and the token has not expired. Only found tokens are stored (an unknown
/// token costs an attacker a database lookup each time, as before), at most `limit` of them.
final class TokenLookupCache<Stamps: AnswerStamps>: Sendable {
    fileprivate struct Entry {
        let record: TokenRecord
        let stamp: Stamps.Stamp
    }

    final class Shard: Sendable {
        fileprivate let entries = Mutex<[[UInt8]: Entry]>([:])
    }

    /// A lookup that missed: where and under which stamp to keep its answer (`keep`).
    struct Miss: Sendable {
        fileprivate let stamp: Stamps.Stamp?
        fileprivate let shard: Shard
    }

    /// What memory holds for a token.
    enum Answer {
        case kept(TokenRecord)
        case missed(Miss)
    }

    let stamps: Stamps
    private let shards = (0..<16).map { _ in Shard() }
    private let perShard: Int
    /// Lookups answered from memory since start (for tests).
    let hits = Atomic<Int>(0)

    /// The calling thread's shard: every worker keeps its own answers (a gateway checks one hot
    /// token from every worker at once, and one lock for it made the workers queue and multiplied
    /// the CPU per request, docs/BENCHMARKS.md).
    private var threadShard: Shard { shards[ThreadShard.index(among: shards.count)] }

    init(stamps: Stamps, limit: Int = 16_384) {
        self.stamps = stamps
        perShard = max(1, limit / 16)
    }

    /// The token's record from memory, or the miss to pass to `keep` with what the lookup found.
    func answer(hash: [UInt8], at time: Int64) -> Answer {
        let shard = threadShard
        guard let before = stamps.current() else { return .missed(Miss(stamp: nil, shard: shard)) }
        if let entry = shard.entries.withLock({ $0[hash] }), entry.stamp == before, time < entry.record.expiresAt {
            hits.add(1, ordering: .relaxed)
            return .kept(entry.record)
        }
        return .missed(Miss(stamp: before, shard: shard))
    }

    /// Keeps what the lookup after `miss` found, unless the stamp changed meanwhile.
    func keep(_ record: TokenRecord, hash: [UInt8], after miss: Miss) {
        guard let stamp = miss.stamp, stamps.current() == stamp else { return }
        miss.shard.entries.withLock { entries in
            if entries.count >= perShard { entries.removeAll(keepingCapacity: true) }
            entries[hash] = Entry(record: record, stamp: stamp)
        }
    }

    /// The token's record: from memory while the stamp has not changed since it was read,
    /// otherwise from `lookup` (and kept when the stamp did not change while it ran).
    func activeToken(
        hash: [UInt8], at time: Int64, lookup: () throws(StorageError) -> TokenRecord?
    ) throws(StorageError) -> TokenRecord? {
        switch answer(hash: hash, at: time) {
        case .kept(let record):
            return record
        case .missed(let miss):
            let record = try lookup()
            if let record { keep(record, hash: hash, after: miss) }
            return record
        }
    }
}
