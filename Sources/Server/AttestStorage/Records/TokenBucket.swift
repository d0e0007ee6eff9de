/// The token-bucket arithmetic, in one place: the in-memory limiter of each node and the buckets
/// the stores share between nodes both use it.
package struct TokenBucket: Sendable, Equatable {
    /// Tokens left (fractional).
    package var tokens: Double
    /// When `tokens` was last computed, Unix seconds (fractional).
    package var updatedAt: Double

    /// A bucket holding `tokens` at `updatedAt`.
    package init(tokens: Double, updatedAt: Double) { (self.tokens, self.updatedAt) = (tokens, updatedAt) }

    /// Refills at `perSecond` up to `burst`, then takes one token: nil when one was taken, or the
    /// whole seconds to wait (at least 1) when the bucket is empty.
    package mutating func take(perSecond: Double, burst: Double, now: Double) -> Int? {
        tokens = min(burst, tokens + max(0, now - updatedAt) * perSecond)
        updatedAt = now
        guard tokens >= 1 else { return max(1, Int(((1 - tokens) / perSecond).rounded(.up))) }
        tokens -= 1
        return nil
    }
}
