import Synchronization

/// A rate: `perSecond` sustained, `burst` at once. Zero `perSecond` disables the limit.
package struct RateLimit: Sendable, Hashable {
    package var perSecond: Double
    package var burst: Double

    package init(perSecond: Double, burst: Double) {
        self.perSecond = perSecond
        self.burst = burst
    }

    /// No limit.
    package static let unlimited = RateLimit(perSecond: 0, burst: 0)
}

/// Token buckets keyed by string (an integration, a client address), refilled from the injected
/// clock. Memory is bounded: past `maximumKeys` the table is cleared, which only ever forgives.
package final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updatedAt: Double
    }

    private let buckets = Mutex<[String: Bucket]>([:])
    private let maximumKeys: Int

    package init(maximumKeys: Int = 100_000) {
        self.maximumKeys = maximumKeys
    }

    /// Takes one token for `key`; returns nil when allowed, or the seconds to wait.
    package func take(_ key: String, limit: RateLimit, now: Double) -> Int? {
        guard limit.perSecond > 0 else { return nil }
        return buckets.withLock { table -> Int? in
            if table.count >= maximumKeys, table[key] == nil { table.removeAll(keepingCapacity: true) }
            var bucket = table[key] ?? Bucket(tokens: limit.burst, updatedAt: now)
            bucket.tokens = min(limit.burst, bucket.tokens + max(0, now - bucket.updatedAt) * limit.perSecond)
            bucket.updatedAt = now
            defer { table[key] = bucket }
            guard bucket.tokens >= 1 else {
                return max(1, Int(((1 - bucket.tokens) / limit.perSecond).rounded(.up)))
            }
            bucket.tokens -= 1
            return nil
        }
    }
}
