/// Lifetimes, scope and rate limits of the token service.
package struct ServicePolicy: Sendable {
    /// Seconds a challenge stays usable (once).
    package var challengeLifetime: Int64 = 300
    /// Seconds an access token is valid.
    package var tokenLifetime: Int64 = 3600
    /// The only scope tokens carry: the Messages API.
    package var scope = "messages"
    /// New keys (attestations) per integration: Apple asks for under ~100 per second per app.
    package var attestPerIntegration = RateLimit(perSecond: 100, burst: 200)
    /// Challenges per integration (refreshes need one each, so this is far above the attest rate).
    package var challengePerIntegration = RateLimit(perSecond: 5_000, burst: 10_000)
    /// Challenges and attestations per client address.
    package var perAddress = RateLimit(perSecond: 20, burst: 40)
    /// Access tokens one debug token may mint, shared by every node: 60 an hour, all at once if
    /// need be (a CI run's parallel jobs), then one a minute.
    package var debugTokenMints = RateLimit(perSecond: 60.0 / 3600, burst: 60)
    /// TEST MODE ONLY: allow `seedChallenge` (recorded-device replay).
    package var allowsSeededChallenges = false
    /// How long after its attestation a device may refresh without a known fraud-risk metric when
    /// its integration sets `--max-risk-metric`: Apple's first RECEIPT comes from the refresher
    /// once the attestation's receipt is a day old, so two days leave room for a pass and a retry.
    /// After it, a device with no verified metric is refused (`risk_metric_unknown`): the policy
    /// fails closed.
    package var riskMetricGraceSeconds: Int64 = 172_800
    /// How far this node's clock may stray from the shared database's before the node refuses to
    /// serve: decisions about shared rows (a token's or challenge's expiry, the purge) are taken by
    /// each node's clock, so a node 2 hours fast would purge every node's live tokens.
    package var clockSkewToleranceSeconds: Double = 5

    package init() {}
}
