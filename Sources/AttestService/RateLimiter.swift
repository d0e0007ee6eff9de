import Synchronization

/// A rate: `perSecond` sustained, `burst` at once. Zero `perSecond` disables the limit.
package struct RateLimit: Sendable, Hashable {
    package var perSecond: Double
    package var burst: Double

    /// A limit of `perSecond` sustained with bursts up to `burst`.
    package init(perSecond: Double, burst: Double) {
        self.perSecond = perSecond
        self.burst = burst
    }

    /// No limit.
    package static let unlimited = RateLimit(perSecond: 0, burst: 0)
}

/// What a token bucket counts.
package enum RateLimitKey: Sendable, Hashable {
    /// Challenges issued for an integration.
    case challenges(clientID: String)
    /// New keys attested for an integration.
    case attestations(clientID: String)
    /// Challenges and attestations from one client address.
    case address(String)
}

/// Token buckets, refilled from the injected clock.
///
/// Memory is bounded where a caller chooses the keys: past `maximumAddresses` address buckets,
/// the least recently used half is dropped (which only ever forgives an address). The
/// per-integration buckets are never dropped, so spraying addresses cannot reset an
/// integration's limit; their number is bounded by the integrations that exist, because only
/// an existing integration's client ID reaches the limiter.
package final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updatedAt: Double
    }

    private struct Tables {
        var integrations: [RateLimitKey: Bucket] = [:]
        var addresses: [RateLimitKey: Bucket] = [:]
    }

    private let tables = Mutex(Tables())
    private let maximumAddresses: Int

    /// A limiter keeping at most `maximumAddresses` address buckets.
    package init(maximumAddresses: Int = 100_000) {
        self.maximumAddresses = max(2, maximumAddresses)
    }

    /// Takes one token for `key`; returns nil when allowed, or the seconds to wait.
    package func take(_ key: RateLimitKey, limit: RateLimit, now: Double) -> Int? {
        guard limit.perSecond > 0 else { return nil }
        return tables.withLock { tables -> Int? in
            if case .address = key {
                if tables.addresses.count >= maximumAddresses, tables.addresses[key] == nil { evictOldestAddresses(&tables.addresses) }
                return Self.take(&tables.addresses, key, limit, now)
            }
            return Self.take(&tables.integrations, key, limit, now)
        }
    }

    /// How many address buckets are held (for tests of the bound).
    package var addressBucketCount: Int { tables.withLock { $0.addresses.count } }

    private func evictOldestAddresses(_ table: inout [RateLimitKey: Bucket]) {
        let cutoff = table.values.map(\.updatedAt).sorted()[table.count / 2]
        table = table.filter { $0.value.updatedAt > cutoff }
    }

    private static func take(_ table: inout [RateLimitKey: Bucket], _ key: RateLimitKey, _ limit: RateLimit, _ now: Double) -> Int? {
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
