internal import Glibc

/// Which of `count` shards the calling thread uses: a hash of its pthread_t (whose low bits are
/// alike from thread to thread), so that threads working at once mostly take different locks.
enum ThreadShard {
    /// From 0 to `count - 1`; the same for a thread every time.
    static func index(among count: Int) -> Int {
        let hash = UInt64(pthread_self()) &* 0x9E37_79B9_7F4A_7C15
        return Int(hash >> 56) % count
    }
}
