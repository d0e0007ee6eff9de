package import AttestCore
import AttestCrypto
package import AttestStorage
import Synchronization

/// The store roles the token service uses: challenges, devices, lookups and upkeep (not
/// administration nor receipts).
package typealias ServiceStore = ChallengeStore & DeviceStore & TokenLookupStore & DebugTokenStore & StoreMaintenance

/// The device-facing and gateway-facing use cases: challenges, attestation, refresh by
/// assertion, introspection, and the housekeeping the server runs (purge, counts, readiness).
/// Input arrives decoded and typed; time and randomness are injected; every state change is one
/// store transaction that re-checks the integration's status.
package final class TokenService: Sendable {
    /// Access tokens start with this, so secret scanners can find leaked ones.
    package static let tokenPrefix = "atk_"
    /// `atk_` + base64url of 32 bytes.
    package static let tokenLength = 4 + 43

    let store: any ServiceStore
    let verifier: AttestationVerifier
    let clock: any WallClock
    let random: any RandomSource
    package let policy: ServicePolicy
    let limiter = RateLimiter()
    let keys = PublicKeyCache()
    let challenges: ChallengeLedger
    /// This node's clock against the shared database's, as last measured.
    let clockCheck = ClockCheck()
    /// Client IDs this node has read as active (`issueChallenge`).
    let activeHints = ActiveIntegrationHints()
    /// SHA-256 (hex) of each trust anchor: a device records the one its chain ended at, and
    /// refreshes only while that anchor is still trusted.
    let anchorFingerprints: Set<String>
    /// Checks the receipt of every attestation (Apple Root CA - G3); nil: receipts are stored unchecked.
    let receipts: ReceiptVerifier?
    /// Told every receipt verdict at attestation (for the metrics).
    let observer: (any ServiceObserver)?
    /// Run the store's work of `attest(_:from:then:)`, `refresh(_:from:then:)`, challenges and
    /// revocations off the caller's thread (an HTTP worker).
    let writeWaiters: WriteWaiters

    /// A service over `store`, verifying attestations with `verifier`.
    package init(
        store: any ServiceStore, verifier: AttestationVerifier, clock: any WallClock = SystemWallClock(),
        random: any RandomSource = SystemRandom(), policy: ServicePolicy = ServicePolicy(), receipts: ReceiptVerifier? = nil,
        observer: (any ServiceObserver)? = nil, writeWaiters: Int = 8
    ) {
        self.store = store
        self.verifier = verifier
        self.clock = clock
        self.random = random
        self.policy = policy
        challenges = ChallengeLedger(store: store, lifetime: policy.challengeLifetime)
        anchorFingerprints = Set(verifier.anchors.map(\.sha256Hex))
        self.receipts = receipts
        self.observer = observer
        self.writeWaiters = WriteWaiters(limit: writeWaiters)
    }

    // MARK: Challenge

    /// A fresh single-use challenge for an active integration.
    ///
    /// The integration is read first only when this node has not yet seen it active
    /// (`activeHints`); otherwise the insert, which checks it in the same statement, is the only
    /// store statement. Either way nothing reaches the rate limiter for a client ID never found.
    package func issueChallenge(clientID requested: ClientID, from address: String) throws(ServiceError) -> IssuedChallenge {
        try requireAgreeingClock()
        return try issueChallengeOnAgreeingClock(requested, from: address)
    }

    /// `issueChallenge`, answered through `reply` exactly once. The insert runs on a waiter
    /// (`WriteWaiters`), and so does the integration's read when this node has not seen it
    /// active: an HTTP worker never waits for the store here, so a slow statement (a disk busy
    /// flushing, a lock) does not hold the gateway checks the same worker answers from memory.
    /// The clock check and, for a known integration, the rate limits refuse at once, on this thread.
    package func issueChallenge(
        clientID requested: ClientID, from address: String,
        then reply: @escaping @Sendable (Result<IssuedChallenge, ServiceError>) -> Void
    ) {
        let now = clock.now()
        do throws(ServiceError) {
            try requireAgreeingClock()
            guard activeHints.contains(requested.text) else {
                return writeWaiters.run(
                    { () throws(ServiceError) in try self.issueChallengeOnAgreeingClock(requested, from: address) }, then: reply)
            }
            try takeChallengeBudget(requested.text, from: address, now: now)
        } catch {
            return reply(.failure(error))
        }
        // Its lifetime counts from the insert: a wait for a waiter does not shorten it.
        writeWaiters.run(
            { () throws(ServiceError) in try self.storeChallenge(requested, as: requested.text, now: self.clock.now()) }, then: reply)
    }

    /// `issueChallenge` once the clock check has passed: the integration, its limits, the insert.
    private func issueChallengeOnAgreeingClock(_ requested: ClientID, from address: String) throws(ServiceError) -> IssuedChallenge {
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
    /// every other device's challenges (issue 18, M2).
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

    /// Spends a presented challenge whose request was refused before reaching the service (a
    /// malformed field): a challenge is spent on its first presentation, whatever the outcome.
    package func spend(_ challenge: Challenge) throws(ServiceError) {
        try challenges.spend(challenge, now: clock.now())
    }

    // MARK: Attest

    /// Verifies an attestation, registers the key and mints its first token.
    ///
    /// The per-integration attest bucket (shared by every node) is charged only for an
    /// attestation that verified, so junk requests from anyone who knows a client ID cannot
    /// exhaust the integration's budget for new devices (issue 18, M1). The verification work
    /// itself is bounded before that: each attempt spends a challenge (limited per integration
    /// and per address when it was issued) and is limited per client address here.
    package func attest(_ request: AttestRequest, from address: String) throws(ServiceError) -> IssuedToken {
        try attest(Presented(request), from: address)
    }

    /// `attest` on a request as presented: its other fields are decoded here, so that a malformed
    /// one spends the challenge by the ledger's rule.
    package func attest(_ presented: Presented<AttestRequest>, from address: String) throws(ServiceError) -> IssuedToken {
        try prepareAttest(presented, from: address).issue()
    }

    /// `attest`, answered through `reply` exactly once, from a write waiter (`WriteWaiters`): the
    /// checks, the verification and the registration's durable commit all run there, so that the
    /// caller (an HTTP worker) never waits for the store and serves other requests meanwhile, and
    /// the writes that queue up share a flush.
    package func attest(
        _ presented: Presented<AttestRequest>, from address: String,
        then reply: @escaping @Sendable (Result<IssuedToken, ServiceError>) -> Void
    ) {
        issueLater({ () throws(ServiceError) in try self.prepareAttest(presented, from: address) }, then: reply)
    }

    /// Everything `attest` does before its registration is written.
    func prepareAttest(_ presented: Presented<AttestRequest>, from address: String) throws(ServiceError) -> PreparedToken {
        try requireAgreeingClock()
        let now = clock.now()
        return try presenting(presented, .attestation, now: now) { request, found throws(ServiceError) -> PreparedToken.Write in
            let integration = try activeIntegration(request.clientID)
            found = integration.clientID
            return try attest(request, integration: integration, from: address, now: now)
        }
    }

    private func attest(
        _ request: AttestRequest, integration: IntegrationRecord, from address: String, now: Int64
    ) throws(ServiceError) -> PreparedToken.Write {
        try limit(.address(address), policy.perAddress, now: now)
        let challengeID = try challenges.usable(request.challenge, for: integration, now: now)
        if let maximum = integration.policy.maxNewKeysPerHour {
            let recent = try stored { () throws(StorageError) in
                try store.newKeyCount(clientID: integration.clientID, since: now - 3600)
            }
            guard recent < maximum else {
                throw ServiceError(
                    .rateLimited, .newKeysPerHour, "the integration registered its \(maximum) new keys of the last hour", retryAfter: 60
                )
            }
        }
        let appIDs = try Self.appIDs(integration)
        let verified: VerifiedAttestation
        do throws(AttestError) {
            verified = try verifier.verify(
                AttestationInput(
                    object: request.object, keyID: request.keyID.bytes, clientDataHash: Digest.sha256(request.challenge.bytes),
                    appIDs: appIDs,
                    allowedEnvironments: Set(integration.environments), time: now))
        } catch {
            throw ServiceError.rejected(error, attestation: true)
        }
        let receipt = try receiptState(of: verified, integration: integration, now: now)
        let registration = try register(
            verified, receipt: receipt, keyID: request.keyID, integration: integration, challengeID: challengeID, now: now)
        let clientID = integration.clientID
        let rate = policy.attestPerIntegration
        return { () throws(ServiceError) -> IssuedToken in
            // Only now: a request that failed verification (or the required receipt check) spent
            // nothing of the new-key budget, which genuine devices need. With the registration,
            // as it is a write too; by the clock of now, not the request's, as the bucket is
            // refilled by the time between its takes.
            try self.sharedLimit(.attestations(clientID: clientID), rate, now: self.clock.now())
            return try registration()
        }
    }

    /// Runs a device request's use case on its fields, decoded inside the challenge ledger's
    /// `spendingOnFailure` (so a malformed field spends the challenge), up to its write; the
    /// write, when issued, runs under the same rule. The outcome is reported once: a refusal
    /// before the write at once, the write's outcome when it ends.
    private func presenting<Request>(
        _ presented: Presented<Request>, _ kind: VerificationKind, now: Int64,
        _ body: (Request, inout String?) throws(ServiceError) -> PreparedToken.Write
    ) throws(ServiceError) -> PreparedToken {
        var found: String?
        let write: PreparedToken.Write
        do {
            write = try challenges.spendingOnFailure(presented.challenge, now: now) { () throws(ServiceError) in
                try body(try presented.fields(), &found)
            }
        } catch {
            report(kind, error, clientID: found)
            throw error
        }
        let challenge = presented.challenge
        let clientID = found
        return PreparedToken { () throws(ServiceError) -> IssuedToken in
            do throws(ServiceError) {
                let token = try self.challenges.spendingOnFailure(challenge, now: now, write)
                self.observer?.verificationFinished(kind, outcome: "ok", clientID: clientID)
                self.observer?.tokenIssued(debug: false)
                return token
            } catch {
                self.report(kind, error, clientID: clientID)
                throw error
            }
        }
    }

    /// Runs `prepare` and then the write it prepared, both on a write waiter; `reply` hears the
    /// outcome once.
    private func issueLater(
        _ prepare: @escaping @Sendable () throws(ServiceError) -> PreparedToken,
        then reply: @escaping @Sendable (Result<IssuedToken, ServiceError>) -> Void
    ) {
        writeWaiters.run({ () throws(ServiceError) in try prepare().issue() }, then: reply)
    }

    /// Reports a refused verification to the observer: overall, and per integration when
    /// `clientID` (the stored one) is known.
    private func report(_ kind: VerificationKind, _ error: ServiceError, clientID: String?) {
        switch (error.code, error.subcode) {
        case (.attestationRejected, _), (.assertionRejected, _), (.malformedRequest, .check):
            observer?.verificationFinished(kind, outcome: error.subcode.identifier, clientID: clientID)
        case (.malformedRequest, _):
            observer?.verificationFinished(kind, outcome: error.subcode.identifier, clientID: nil)
        default:
            break
        }
    }

    /// The write that stores the verified key and its first token, consuming the challenge in the
    /// same transaction.
    private func register(
        _ verified: VerifiedAttestation, receipt: ReceiptState?, keyID: KeyID, integration: IntegrationRecord, challengeID: [UInt8],
        now: Int64
    ) throws(ServiceError) -> PreparedToken.Write {
        let (token, record) = try mint(for: integration, keyID: keyID, now: now)
        let device = DeviceRecord(
            keyID: keyID.bytes, clientID: integration.clientID, publicKey: verified.publicKey, counter: 0,
            environment: verified.environment, receipt: verified.receipt, status: .active, createdAt: now, updatedAt: now,
            trustAnchor: Hex.encode(verified.anchorFingerprint), appID: verified.appID.description, receiptState: receipt,
            credentialSHA256: Digest.sha256(verified.credentialCertificate))
        // The cap counted again inside the registering transaction, serialised per integration: the
        // count before verification only saves the work, two registrations racing past it are
        // settled here.
        let cap = integration.policy.maxNewKeysPerHour.map { NewKeyCap(maximum: $0, since: now - 3600) }
        return { () throws(ServiceError) -> IssuedToken in
            let outcome = try stored { () throws(StorageError) in
                try self.store.registerDevice(device, firstToken: record, consumingChallenge: challengeID, at: now, newKeyCap: cap)
            }
            return try Self.registered(outcome, token: token, cap: cap)
        }
    }

    private static func registered(_ outcome: RegistrationOutcome, token: IssuedToken, cap: NewKeyCap?) throws(ServiceError) -> IssuedToken
    {
        switch outcome {
        case .registered: return token
        case .newKeyCapReached:
            throw ServiceError(
                .rateLimited, .newKeysPerHour, "the integration registered its \(cap?.maximum ?? 0) new keys of the last hour",
                retryAfter: 60)
        case .challengeUsed: throw ServiceError.challengeUsed
        case .integrationRevoked: throw ServiceError.integrationRevoked
        case .integrationSuspended: throw ServiceError.integrationSuspended
        case .keyExists(.active): throw ServiceError.keyAlreadyRegistered
        case .keyExists(.revoked): throw ServiceError.deviceBlocked
        }
    }

    // MARK: Refresh

    /// Verifies an assertion by a registered key, advances its counter and mints a token.
    package func refresh(_ request: RefreshRequest, from address: String) throws(ServiceError) -> IssuedToken {
        try refresh(Presented(request), from: address)
    }

    /// `refresh` on a request as presented: its other fields are decoded here, so that a
    /// malformed one spends the challenge by the ledger's rule.
    package func refresh(_ presented: Presented<RefreshRequest>, from address: String) throws(ServiceError) -> IssuedToken {
        try prepareRefresh(presented).issue()
    }

    /// `refresh`, answered through `reply` exactly once, from a write waiter: the reads, the
    /// verification and the counter's durable write, as `attest(_:from:then:)`.
    package func refresh(
        _ presented: Presented<RefreshRequest>, from address: String,
        then reply: @escaping @Sendable (Result<IssuedToken, ServiceError>) -> Void
    ) {
        issueLater({ () throws(ServiceError) in try self.prepareRefresh(presented) }, then: reply)
    }

    /// Everything `refresh` does before the counter is written.
    func prepareRefresh(_ presented: Presented<RefreshRequest>) throws(ServiceError) -> PreparedToken {
        try requireAgreeingClock()
        let now = clock.now()
        return try presenting(presented, .assertion, now: now) { request, found throws(ServiceError) -> PreparedToken.Write in
            // The three reads in one go (one round trip on PostgreSQL); checked in the same order as apart.
            let inputs = try stored { () throws(StorageError) in
                try store.refreshInputs(
                    clientID: request.clientID.text, challengeID: request.challenge.storedID, keyID: request.keyID.bytes)
            }
            let integration = try Self.active(inputs.integration)
            found = integration.clientID
            let challengeID = try challenges.usable(request.challenge, stored: inputs.challenge, for: integration, now: now)
            return try refresh(request, device: inputs.device, challengeID: challengeID, integration: integration, now: now)
        }
    }

    private func refresh(
        _ request: RefreshRequest, device: DeviceRecord?, challengeID: [UInt8], integration: IntegrationRecord, now: Int64
    ) throws(ServiceError) -> PreparedToken.Write {
        // Why parse before the device is looked at: a malformed assertion gets the same answer
        // whether or not its key is registered, so the answer is no oracle for registered keys.
        do throws(AttestError) {
            _ = try AssertionVerifier.parse(request.object)
        } catch {
            throw ServiceError.rejected(error, attestation: false)
        }
        // An unknown key and a key of another integration get the same answer as a bad signature.
        let unknownKey = ServiceError(.assertionRejected, .check(.signature), "the assertion does not verify")
        guard let device, device.clientID == integration.clientID else { throw unknownKey }
        guard device.status == .active else { throw ServiceError.deviceBlocked }
        try Self.checkReceiptPolicy(integration.policy, device: device, now: now, grace: policy.riskMetricGraceSeconds)
        // Why: a key attested while a test root was trusted must not refresh under Apple's root
        // (or the other way round); the anchor is part of what its attestation proved. A key
        // attested under Apple's current root keeps refreshing while a next root is added.
        guard anchorFingerprints.contains(device.trustAnchor) else {
            throw ServiceError(.assertionRejected, .check(.trustAnchor), "this key was attested under another trust anchor")
        }
        guard let key = keys.key(for: device) else { throw unknownKey }

        // Why: an assertion proves the App ID its key attested as, not any of the integration's.
        let appIDs = try Self.appIDs(integration).filter { device.appID == nil || $0.description == device.appID }
        let verified: VerifiedAssertion
        do throws(AttestError) {
            verified = try AssertionVerifier.verify(
                AssertionInput(
                    object: request.object, clientDataHash: Digest.sha256(request.challenge.bytes), publicKey: key,
                    appIDs: appIDs, previousCounter: device.counter))
        } catch  where error.code == .signature {
            throw unknownKey  // byte-identical to the unknown-key answer: no oracle for registered keys
        } catch {
            throw ServiceError.rejected(error, attestation: false)
        }
        let (token, record) = try mint(for: integration, keyID: request.keyID, now: now)
        let keyID = request.keyID.bytes
        let counters = (from: device.counter, to: verified.counter)
        let keepingLatest = integration.maxLiveTokensPerDevice
        return { () throws(ServiceError) -> IssuedToken in
            let outcome = try stored { () throws(StorageError) in
                try self.store.advanceCounter(
                    keyID: keyID, from: counters.from, to: counters.to, at: now, token: record, consumingChallenge: challengeID,
                    keepingLatest: keepingLatest)
            }
            return try Self.advanced(outcome, token: token)
        }
    }

    private static func advanced(_ outcome: CounterAdvance, token: IssuedToken) throws(ServiceError) -> IssuedToken {
        switch outcome {
        case .advanced: return token
        case .challengeUsed: throw ServiceError.challengeUsed
        case .counterChanged:
            throw ServiceError(.assertionRejected, .check(.counterNotIncreasing), "another request used this counter first")
        case .integrationRevoked: throw ServiceError.integrationRevoked
        case .integrationSuspended: throw ServiceError.integrationSuspended
        case .deviceBlocked: throw ServiceError.deviceBlocked
        }
    }

    // MARK: Steps

    private func activeIntegration(_ clientID: ClientID) throws(ServiceError) -> IntegrationRecord {
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
    private static func active(_ integration: IntegrationRecord?) throws(ServiceError) -> IntegrationRecord {
        guard let integration else { throw ServiceError.integrationNotFound }
        guard integration.status == .active else { throw ServiceError.integrationRevoked }
        guard integration.suspendedAt == nil else { throw ServiceError.integrationSuspended }
        return integration
    }

    private func limit(_ key: RateLimitKey, _ rate: RateLimit, now: Int64) throws(ServiceError) {
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

    private func mint(for integration: IntegrationRecord, keyID: KeyID, now: Int64) throws(ServiceError) -> (IssuedToken, TokenRecord) {
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

/// A device request checked and verified, its token minted: what is left is the durable write
/// (attest's registration, refresh's counter), run by `issue` on any thread, once.
struct PreparedToken: Sendable {
    typealias Write = @Sendable () throws(ServiceError) -> IssuedToken

    let issue: Write
}
