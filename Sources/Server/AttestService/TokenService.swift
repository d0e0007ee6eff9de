package import AttestCore
import AttestCrypto
package import AttestStorage
import Synchronization

/// The store roles the token service uses: challenges, devices, lookups and upkeep (not
/// administration nor receipts).
package typealias ServiceStore = ChallengeStore & DeviceStore & TokenLookupStore & DebugTokenStore & StoreMaintenance

/// The device-facing and gateway-facing use cases: challenges, attestation, refresh by
/// assertion, introspection, and the housekeeping the server runs (purge, counts, readiness).
/// One synchronous function per use case, written top to bottom; input arrives decoded and
/// typed; time and randomness are injected; every state change is one store transaction that
/// re-checks the integration's status. The caller chooses the thread (the HTTP edge runs them
/// off its workers, `RouteAnswer.offload`).
package final class TokenService: Sendable {
    /// Access tokens start with this, so secret scanners can find leaked ones.
    package static let tokenPrefix = "atk_"
    /// `atk_` + base64url of 32 bytes.
    package static let tokenLength = 4 + 43

    let store: any ServiceStore
    let verifier: AttestationVerifier
    package let clock: any WallClock
    let random: any RandomSource
    package let policy: ServicePolicy
    let limiter = RateLimiter()
    let keys = PublicKeyCache()
    let challenges: ChallengeLedger
    /// This node's clock against the shared database's, as last measured.
    let clockCheck = ClockCheck()
    /// How far a purge may delete on a store whose clock is this node's.
    let purgeHorizon: Mutex<PurgeHorizon>
    /// Client IDs this node has read as active (`issueChallenge`).
    let activeHints = ActiveIntegrationHints()
    /// SHA-256 (hex) of each trust anchor: a device records the one its chain ended at, and
    /// refreshes only while that anchor is still trusted.
    let anchorFingerprints: Set<String>
    /// Checks the receipt of every attestation (Apple Root CA - G3); nil: receipts are stored unchecked.
    let receipts: ReceiptVerifier?
    /// Told every receipt verdict at attestation (for the metrics).
    let observer: (any ServiceObserver)?

    /// A service over `store`, verifying attestations with `verifier`.
    package init(
        store: any ServiceStore, verifier: AttestationVerifier, clock: any WallClock = SystemWallClock(),
        random: any RandomSource = SystemRandom(), policy: ServicePolicy = ServicePolicy(), receipts: ReceiptVerifier? = nil,
        observer: (any ServiceObserver)? = nil
    ) {
        self.store = store
        self.verifier = verifier
        self.clock = clock
        self.random = random
        self.policy = policy
        challenges = ChallengeLedger(store: store, lifetime: policy.challengeLifetime)
        purgeHorizon = Mutex(PurgeHorizon(hold: Double(policy.tokenLifetime), tolerance: policy.clockSkewToleranceSeconds))
        anchorFingerprints = Set(verifier.anchors.map(\.sha256Hex))
        self.receipts = receipts
        self.observer = observer
    }

    // MARK: Challenge

    /// A fresh single-use challenge for an active integration.
    ///
    /// The integration is read first only when this node has not yet seen it active
    /// (`activeHints`); otherwise the insert, which checks it in the same statement, is the only
    /// store statement. Either way nothing reaches the rate limiter for a client ID never found.
    package func issueChallenge(clientID requested: ClientID, from address: String) throws(ServiceError) -> IssuedChallenge {
        try requireAgreeingClock()
        let clientID = try activeClientID(requested)
        let now = clock.now()
        try takeChallengeBudget(clientID, from: address, now: now)
        return try storeChallenge(requested, as: clientID, now: now)
    }

    /// The client ID as stored: every in-memory key below is one (a hint holds only IDs read from
    /// the store), never merely what the request spelt.
    private func activeClientID(_ requested: ClientID) throws(ServiceError) -> String {
        if activeHints.contains(requested.text) { return requested.text }
        let clientID = try activeIntegration(requested).clientID
        activeHints.remember(clientID)
        return clientID
    }

    /// Both limits a challenge spends, in one step: a request refused by its address's own limit
    /// must not also spend the integration's budget, or one address held to its limit drains
    /// every other device's challenges (decision 0010).
    private func takeChallengeBudget(_ clientID: String, from address: String, now: Int64) throws(ServiceError) {
        if let wait = limiter.take(
            [(.challenges(clientID: clientID), policy.challengePerIntegration), (.address(address), policy.perAddress)],
            now: Double(now))
        {
            throw ServiceError.rateLimited(retryAfter: wait)
        }
    }

    /// Inserts a fresh challenge for `clientID` (the stored spelling of `requested`) while the
    /// integration is active.
    private func storeChallenge(_ requested: ClientID, as clientID: String, now: Int64) throws(ServiceError) -> IssuedChallenge {
        try whileActive(requested) { () throws(ServiceError) -> IssuedChallenge? in
            let issued = try challenges.issue(for: clientID, random: random, now: now)
            if issued == nil { activeHints.forget(clientID) }
            return issued
        }
    }

    /// TEST MODE ONLY (`attestd --insecure-test-mode`): stores `challenge` as issued so that
    /// objects recorded from real devices, whose client data are fixed, can be replayed.
    package func seedChallenge(clientID: ClientID, challenge: Challenge) throws(ServiceError) {
        guard policy.allowsSeededChallenges else {
            throw ServiceError.malformed(.testMode, "challenge seeding needs --insecure-test-mode")
        }
        let integration = try activeIntegration(clientID)
        let now = clock.now()
        try whileActive(clientID) { () throws(ServiceError) -> Void? in
            try challenges.seed(challenge, for: integration.clientID, now: now) ? () : nil
        }
    }

    /// Refuses a device request the route could not decode past its challenge (a malformed
    /// field): the challenge is spent, as on every first presentation whatever the outcome, and
    /// the refusal counted as the verification's, unless the clock check refuses first (then
    /// nothing is spent, as for a request that decoded).
    package func refuse(_ error: ServiceError, presenting challenge: Challenge, as kind: VerificationKind) throws(ServiceError) -> Never {
        try requireAgreeingClock()
        try challenges.spend(challenge, now: clock.now())
        report(kind, error, clientID: nil)
        throw error
    }

    // MARK: Steps

    func activeIntegration(_ clientID: ClientID) throws(ServiceError) -> IntegrationRecord {
        try Self.active(try stored({ () throws(StorageError) in try store.integration(clientID: clientID.text) }))
    }

    /// The result of `write`, a store write that checks in its own statement that the integration
    /// is active and answers nil when it is not. Then the integration is read again to say why
    /// (revoked or suspended since it was read); should it be active again by then (a suspension
    /// lifted in between), the write runs once more.
    private func whileActive<T>(_ clientID: ClientID, _ write: () throws(ServiceError) -> T?) throws(ServiceError) -> T {
        if let value = try write() { return value }
        _ = try activeIntegration(clientID)
        if let value = try write() { return value }
        throw ServiceError.storage(StorageError(.conflict, "the integration changed state twice during one request"))
    }

    /// The integration when it exists and may be used now.
    static func active(_ integration: IntegrationRecord?) throws(ServiceError) -> IntegrationRecord {
        guard let integration else { throw ServiceError.integrationNotFound }
        guard integration.status == .active else { throw ServiceError.integrationRevoked }
        guard integration.suspendedAt == nil else { throw ServiceError.integrationSuspended }
        return integration
    }

    func limit(_ key: RateLimitKey, _ rate: RateLimit, now: Int64) throws(ServiceError) {
        if let wait = limiter.take(key, limit: rate, now: Double(now)) { throw ServiceError.rateLimited(retryAfter: wait) }
    }

    /// A limit every node of the deployment shares: its bucket lives in the store.
    func sharedLimit(_ key: SharedRateLimitKey, _ rate: RateLimit, now: Int64) throws(ServiceError) {
        guard rate.perSecond > 0 else { return }
        let wait = try stored { () throws(StorageError) in
            try store.takeSharedToken(bucket: key.bucket, perSecond: rate.perSecond, burst: rate.burst, at: Double(now))
        }
        if let wait { throw ServiceError.rateLimited(retryAfter: wait) }
    }

    func mint(for integration: IntegrationRecord, keyID: KeyID, now: Int64) throws(ServiceError) -> (IssuedToken, TokenRecord) {
        let token = Self.tokenPrefix + Base64Text.encode(try random.bytesOrFail(32), .url)
        let record = TokenRecord(
            tokenHash: Digest.sha256(Array(token.utf8)), clientID: integration.clientID, workspaceID: integration.workspaceID,
            keyID: keyID.bytes, scope: policy.scope, issuedAt: now, expiresAt: now + policy.tokenLifetime)
        return (
            IssuedToken(accessToken: token, expiresIn: policy.tokenLifetime, scope: policy.scope, workspaceID: integration.workspaceID),
            record
        )
    }

    static func appIDs(_ integration: IntegrationRecord) throws(ServiceError) -> [AppID] {
        var ids: [AppID] = []
        for bundleID in integration.bundleIDs {
            do {
                ids.append(try AppID(teamID: integration.teamID, bundleID: bundleID))
            } catch {
                throw ServiceError.invalidIntegration(.storedAppID, "the stored integration has an invalid App ID")
            }
        }
        return ids
    }
}
