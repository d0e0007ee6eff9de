import AttestStorage
import Synchronization

/// A rate: `perSecond` sustained, `burst` at once. Zero `perSecond` disables the limit.
package struct RateLimit: Sendable, Hashable {
    package var perSecond: Double
    package var burst: Double

    /// A limit of `perSecond` sustained with bursts up to `burst`.
    package init(perSecond: Double, burst: Double) { (self.perSecond, self.burst) = (perSecond, burst) }

    /// No limit.
    package static let unlimited = RateLimit(perSecond: 0, burst: 0)
}

/// What a node's own token bucket counts (each node of a deployment has its own).
package enum RateLimitKey: Sendable, Hashable {
    /// Challenges issued for an integration.
    case challenges(clientID: String)
    /// Challenges and attestations from one client address (console sign-ins: their own limiter).
    case address(String)
    /// Console sign-ins with one admin key (only an existing key's ID reaches the limiter).
    case signIns(keyID: String)
}

/// What a bucket shared by every node (kept in the store) counts.
package enum SharedRateLimitKey: Sendable, Hashable {
    /// New keys attested for an integration: Apple's ~100 per second per app holds for the deployment.
    case attestations(clientID: String)
    /// Access tokens minted for one debug token, on whichever node.
    case debugToken(id: String)

    /// The bucket's name in the store.
    var bucket: String {
        switch self {
        case .attestations(let clientID): "attestations/" + clientID
        case .debugToken(let id): "debug-tokens/" + id
        }
    }
}

/// Token buckets, refilled from the injected clock.
///
/// Memory is bounded where a caller chooses the keys: past `maximumAddresses` address buckets,
/// the least recently used half is dropped (which only ever forgives an address). The
/// per-integration buckets are never dropped, so spraying addresses cannot reset an
/// integration's limit; their number is bounded by the integrations that exist, because only
/// an existing integration's client ID reaches the limiter.
package final class RateLimiter: Sendable {
    private struct Tables {
        var integrations: [RateLimitKey: TokenBucket] = [:]
        var addresses: [RateLimitKey: TokenBucket] = [:]
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

    /// Takes one token from each of `limits`' buckets only when every one of them has one;
    /// otherwise takes nothing and returns the longest wait. So a request refused by one limit
    /// (its address's) spends nothing of another (its integration's).
    package func take(_ limits: [(key: RateLimitKey, limit: RateLimit)], now: Double) -> Int? {
        let active = limits.filter { $0.limit.perSecond > 0 }
        guard !active.isEmpty else { return nil }
        return tables.withLock { tables -> Int? in
            var taken: [(key: RateLimitKey, bucket: TokenBucket)] = []
            var wait: Int?
            for (key, limit) in active {
                var bucket = Self.bucket(in: tables, key, limit, now)
                if let needed = bucket.take(perSecond: limit.perSecond, burst: limit.burst, now: now) {
                    wait = max(wait ?? 0, needed)
                } else {
                    taken.append((key, bucket))
                }
            }
            guard wait == nil else { return wait }
            for (key, bucket) in taken { store(bucket, for: key, in: &tables) }
            return nil
        }
    }

    /// How many address buckets are held (for tests of the bound).
    package var addressBucketCount: Int { tables.withLock { $0.addresses.count } }
    /// How many per-integration buckets are held (for tests that only existing client IDs get one).
    package var integrationBucketCount: Int { tables.withLock { $0.integrations.count } }

    private func evictOldestAddresses(_ table: inout [RateLimitKey: TokenBucket]) {
        let cutoff = table.values.map(\.updatedAt).sorted()[table.count / 2]
        table = table.filter { $0.value.updatedAt > cutoff }
    }

    private static func bucket(in tables: Tables, _ key: RateLimitKey, _ limit: RateLimit, _ now: Double) -> TokenBucket {
        let existing: TokenBucket? =
            if case .address = key { tables.addresses[key] } else { tables.integrations[key] }
        return existing ?? TokenBucket(tokens: limit.burst, updatedAt: now)
    }

    private func store(_ bucket: TokenBucket, for key: RateLimitKey, in tables: inout Tables) {
        if case .address = key {
            if tables.addresses.count >= maximumAddresses, tables.addresses[key] == nil { evictOldestAddresses(&tables.addresses) }
            tables.addresses[key] = bucket
        } else {
            tables.integrations[key] = bucket
        }
    }

    private static func take(_ table: inout [RateLimitKey: TokenBucket], _ key: RateLimitKey, _ limit: RateLimit, _ now: Double) -> Int? {
        var bucket = table[key] ?? TokenBucket(tokens: limit.burst, updatedAt: now)
        defer { table[key] = bucket }
        return bucket.take(perSecond: limit.perSecond, burst: limit.burst, now: now)
    }
}
