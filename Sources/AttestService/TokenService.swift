package import AttestCore
import AttestCrypto
package import AttestStorage
import Synchronization

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
    /// TEST MODE ONLY: accept seeded challenges of 1 to 256 bytes (recorded-device replay).
    package var allowsSeededChallenges = false

    package init() {}
}

/// A challenge as handed to a device.
package struct IssuedChallenge: Sendable, Equatable {
    /// base64url (no padding) of 32 random bytes.
    package let challenge: String
    package let expiresIn: Int64
}

/// An access token as handed to a device: shown once, stored only as a hash.
package struct IssuedToken: Sendable, Equatable {
    package let accessToken: String
    package let expiresIn: Int64
    package let scope: String
    package let workspaceID: String
}

/// What introspection and forward-auth learn about a valid token.
package struct ActiveToken: Sendable, Equatable {
    package let clientID: String
    package let workspaceID: String
    package let scope: String
    package let issuedAt: Int64
    package let expiresAt: Int64
}

/// The fields of `POST /v1/attest`, as received.
package struct AttestRequest: Sendable {
    package var clientID: String
    package var keyID: String
    package var attestation: String
    package var challenge: String

    package init(clientID: String, keyID: String, attestation: String, challenge: String) {
        self.clientID = clientID
        self.keyID = keyID
        self.attestation = attestation
        self.challenge = challenge
    }
}

/// The fields of `POST /v1/token`, as received.
package struct RefreshRequest: Sendable {
    package var clientID: String
    package var keyID: String
    package var assertion: String
    package var challenge: String

    package init(clientID: String, keyID: String, assertion: String, challenge: String) {
        self.clientID = clientID
        self.keyID = keyID
        self.assertion = assertion
        self.challenge = challenge
    }
}

/// The device-facing and gateway-facing use cases: challenges, attestation, refresh by
/// assertion, introspection. Time and randomness are injected; every state change is one
/// store transaction that re-checks the integration's status.
package final class TokenService: Sendable {
    /// Access tokens start with this, so secret scanners can find leaked ones.
    package static let tokenPrefix = "atk_"
    /// `atk_` + base64url of 32 bytes.
    package static let tokenLength = 4 + 43

    let store: any TokenStore
    let verifier: AttestationVerifier
    let clock: any Clock
    let random: any RandomSource
    package let policy: ServicePolicy
    let limiter = RateLimiter()
    let keys = PublicKeyCache()

    package init(
        store: any TokenStore, verifier: AttestationVerifier, clock: any Clock = SystemClock(),
        random: any RandomSource = SystemRandom(), policy: ServicePolicy = ServicePolicy()
    ) {
        self.store = store
        self.verifier = verifier
        self.clock = clock
        self.random = random
        self.policy = policy
    }

    // MARK: Challenge

    /// A fresh single-use challenge for an active integration.
    package func issueChallenge(clientID: String, from address: String) throws(ServiceError) -> IssuedChallenge {
        let integration = try activeIntegration(clientID)
        let now = clock.now()
        try limit(["c:" + integration.clientID: policy.challengePerIntegration, "a:" + address: policy.perAddress], now: now)
        let id = try randomBytes(32)
        try stored { () throws(StorageError) in
            try store.insertChallenge(
                id: Self.storedID(of: id), clientID: integration.clientID, createdAt: now, expiresAt: now + policy.challengeLifetime)
        }
        return IssuedChallenge(challenge: Encoding.base64URL(id), expiresIn: policy.challengeLifetime)
    }

    /// TEST MODE ONLY (`attestd --insecure-test-mode`): stores `bytes` as an issued challenge so
    /// that objects recorded from real devices, whose client data are fixed, can be replayed.
    package func seedChallenge(clientID: String, bytes: [UInt8]) throws(ServiceError) {
        guard policy.allowsSeededChallenges else {
            throw ServiceError.malformed("test_mode", "challenge seeding needs --insecure-test-mode")
        }
        let integration = try activeIntegration(clientID)
        let now = clock.now()
        try stored { () throws(StorageError) in
            try store.replaceChallenge(
                id: Self.storedID(of: bytes), clientID: integration.clientID, createdAt: now, expiresAt: now + policy.challengeLifetime)
        }
    }

    // MARK: Attest

    /// Verifies an attestation, registers the key and mints its first token.
    package func attest(_ request: AttestRequest, from address: String) throws(ServiceError) -> IssuedToken {
        let keyID = try Self.keyID(request.keyID)
        let object = try Self.object(request.attestation, field: "attestation", limit: AttestationObject.maximumSize)
        let challenge = try challenge(request.challenge)
        let integration = try activeIntegration(request.clientID)
        let now = clock.now()
        try limit(["k:" + integration.clientID: policy.attestPerIntegration, "a:" + address: policy.perAddress], now: now)
        let challengeID = try usableChallenge(challenge, for: integration, now: now)
        return try consumingOnFailure(challengeID, now: now) { () throws(ServiceError) -> IssuedToken in
            let appIDs = try Self.appIDs(integration)
            let verified: VerifiedAttestation
            do throws(AttestError) {
                verified = try verifier.verify(
                    AttestationInput(
                        object: object, keyID: keyID, clientDataHash: Digest.sha256(challenge), appIDs: appIDs,
                        allowedEnvironments: Set(integration.environments.compactMap(AppAttestEnvironment.init(rawValue:))), time: now))
            } catch {
                throw ServiceError.rejected(error, attestation: true)
            }
            return try register(verified, keyID: keyID, integration: integration, challengeID: challengeID, now: now)
        }
    }

    /// Stores the verified key and its first token, consuming the challenge in the same transaction.
    private func register(
        _ verified: VerifiedAttestation, keyID: [UInt8], integration: IntegrationRecord, challengeID: [UInt8], now: Int64
    ) throws(ServiceError) -> IssuedToken {
        let (token, record) = try mint(for: integration, keyID: keyID, now: now)
        let device = DeviceRecord(
            keyID: keyID, clientID: integration.clientID, publicKey: verified.publicKey, counter: 0,
            environment: verified.environment.rawValue, receipt: verified.receipt, status: .active, createdAt: now, updatedAt: now)
        let outcome = try stored { () throws(StorageError) in
            try store.registerDevice(device, firstToken: record, consumingChallenge: challengeID, at: now)
        }
        switch outcome {
        case .registered: return token
        case .challengeUsed: throw Self.challengeUsed
        case .integrationRevoked: throw Self.revoked
        case .keyExists(.active):
            throw ServiceError(.keyAlreadyRegistered, reason: "key_already_registered", "this key ID is already registered")
        case .keyExists(.revoked): throw Self.blocked
        }
    }

    // MARK: Refresh

    /// Verifies an assertion by a registered key, advances its counter and mints a token.
    package func refresh(_ request: RefreshRequest, from address: String) throws(ServiceError) -> IssuedToken {
        let keyID = try Self.keyID(request.keyID)
        let object = try Self.object(request.assertion, field: "assertion", limit: AssertionObject.maximumSize)
        let challenge = try challenge(request.challenge)
        let integration = try activeIntegration(request.clientID)
        let now = clock.now()
        let challengeID = try usableChallenge(challenge, for: integration, now: now)
        return try consumingOnFailure(challengeID, now: now) { () throws(ServiceError) -> IssuedToken in
            try refresh(keyID: keyID, object: object, challenge: challenge, challengeID: challengeID, integration: integration, now: now)
        }
    }

    private func refresh(
        keyID: [UInt8], object: [UInt8], challenge: [UInt8], challengeID: [UInt8], integration: IntegrationRecord, now: Int64
    ) throws(ServiceError) -> IssuedToken {
        // An unknown key and a key of another integration get the same answer as a bad signature.
        let unknownKey = ServiceError(.assertionRejected, reason: AttestError.Code.signature.identifier, "the assertion does not verify")
        guard let device = try stored({ () throws(StorageError) in try store.device(keyID: keyID) }),
            device.clientID == integration.clientID
        else { throw unknownKey }
        guard device.status == .active else { throw Self.blocked }
        guard let key = keys.key(for: device) else { throw unknownKey }

        let appIDs = try Self.appIDs(integration)
        let verified: VerifiedAssertion
        do {
            verified = try AssertionVerifier.verify(
                AssertionInput(
                    object: object, clientDataHash: Digest.sha256(challenge), publicKey: key, appIDs: appIDs,
                    previousCounter: device.counter))
        } catch  where error.code == .signature {
            throw unknownKey  // byte-identical to the unknown-key answer: no oracle for registered keys
        } catch {
            throw ServiceError.rejected(error, attestation: false)
        }
        let (token, record) = try mint(for: integration, keyID: keyID, now: now)
        let outcome = try stored { () throws(StorageError) in
            try store.advanceCounter(
                keyID: keyID, from: device.counter, to: verified.counter, at: now, token: record, consumingChallenge: challengeID)
        }
        switch outcome {
        case .advanced: return token
        case .challengeUsed: throw Self.challengeUsed
        case .counterChanged:
            throw ServiceError(
                .assertionRejected, reason: AttestError.Code.counterNotIncreasing.identifier,
                "another request used this counter first")
        case .integrationRevoked: throw Self.revoked
        case .deviceBlocked: throw Self.blocked
        }
    }

    // MARK: Tokens

    /// The token's facts if it is unexpired and its integration active; nil otherwise (no reason
    /// is given, so introspection is no oracle).
    package func introspect(_ token: String) throws(ServiceError) -> ActiveToken? {
        // Length and prefix first: no hashing or lookup for input that cannot be a token.
        guard token.utf8.count == Self.tokenLength, token.hasPrefix(Self.tokenPrefix) else { return nil }
        let hash = Digest.sha256(Array(token.utf8))
        guard let record = try stored({ () throws(StorageError) in try store.activeToken(hash: hash, at: clock.now()) }) else {
            return nil
        }
        return ActiveToken(
            clientID: record.clientID, workspaceID: record.workspaceID, scope: record.scope, issuedAt: record.issuedAt,
            expiresAt: record.expiresAt)
    }

    /// Deletes expired tokens and challenges.
    package func purgeExpired() throws(ServiceError) -> Int {
        try stored { () throws(StorageError) in try store.purgeExpired(at: clock.now()) }
    }

    // MARK: Steps

    static let revoked = ServiceError(.integrationRevoked, reason: "integration_revoked", "the integration has been revoked")
    static let blocked = ServiceError(.deviceBlocked, reason: "device_blocked", "this device key is blocked")

    private func activeIntegration(_ clientID: String) throws(ServiceError) -> IntegrationRecord {
        guard clientID.utf8.count <= 64, !clientID.isEmpty else {
            throw ServiceError.malformed("client_id", "client_id must be 1 to 64 characters")
        }
        guard let integration = try stored({ () throws(StorageError) in try store.integration(clientID: clientID) }) else {
            throw ServiceError(.integrationNotFound, reason: "integration_not_found", "no integration has this client ID")
        }
        guard integration.status == .active else { throw Self.revoked }
        return integration
    }

    private func limit(_ limits: KeyValuePairs<String, RateLimit>, now: Int64) throws(ServiceError) {
        for (key, rate) in limits {
            if let wait = limiter.take(key, limit: rate, now: Double(now)) {
                throw ServiceError(.rateLimited, reason: "rate_limited", "too many requests; retry later", retryAfter: wait)
            }
        }
    }

    static let challengeUsed = ServiceError(.invalidChallenge, reason: "challenge_used", "this challenge was already presented")

    /// The stored ID of a challenge that can still be used by this integration. Why not consume
    /// it here: the successful path consumes it in the same transaction that stores the result,
    /// saving a durable commit per request; every failing path consumes it too
    /// (`consumingOnFailure`), so it is spent on first presentation whatever the outcome.
    private func usableChallenge(_ challenge: [UInt8], for integration: IntegrationRecord, now: Int64) throws(ServiceError) -> [UInt8] {
        let id = Self.storedID(of: challenge)
        guard let state = try stored({ () throws(StorageError) in try store.challenge(id: id) }) else {
            throw ServiceError(.invalidChallenge, reason: "challenge_unknown", "this challenge was not issued")
        }
        guard !state.consumed else { throw Self.challengeUsed }
        if state.clientID != integration.clientID {
            try consumeNow(id, now: now)
            throw ServiceError(.invalidChallenge, reason: "challenge_wrong_integration", "this challenge was issued to another integration")
        }
        if state.expiresAt <= now {
            try consumeNow(id, now: now)
            throw ServiceError(.invalidChallenge, reason: "challenge_expired", "this challenge has expired")
        }
        return id
    }

    private func consumeNow(_ id: [UInt8], now: Int64) throws(ServiceError) {
        _ = try stored { () throws(StorageError) in try store.consumeChallenge(id: id, at: now) }
    }

    /// Runs `body`; if it fails, consumes the challenge before rethrowing (a no-op when the
    /// failing transaction consumed it already).
    private func consumingOnFailure(
        _ challengeID: [UInt8], now: Int64, _ body: () throws(ServiceError) -> IssuedToken
    ) throws(ServiceError) -> IssuedToken {
        do {
            return try body()
        } catch {
            if error != Self.challengeUsed { try consumeNow(challengeID, now: now) }
            throw error
        }
    }

    private func mint(for integration: IntegrationRecord, keyID: [UInt8], now: Int64) throws(ServiceError) -> (IssuedToken, TokenRecord) {
        let token = Self.tokenPrefix + Encoding.base64URL(try randomBytes(32))
        let record = TokenRecord(
            tokenHash: Digest.sha256(Array(token.utf8)), clientID: integration.clientID, workspaceID: integration.workspaceID,
            keyID: keyID, scope: policy.scope, issuedAt: now, expiresAt: now + policy.tokenLifetime)
        return (
            IssuedToken(accessToken: token, expiresIn: policy.tokenLifetime, scope: policy.scope, workspaceID: integration.workspaceID),
            record
        )
    }

    private func randomBytes(_ count: Int) throws(ServiceError) -> [UInt8] {
        do {
            return try random.bytes(count)
        } catch {
            throw ServiceError(.storageUnavailable, reason: "random", "the random source failed", retryAfter: 1)
        }
    }

    static func appIDs(_ integration: IntegrationRecord) throws(ServiceError) -> [AppID] {
        var ids: [AppID] = []
        for bundleID in integration.bundleIDs {
            do {
                ids.append(try AppID(teamID: integration.teamID, bundleID: bundleID))
            } catch {
                throw ServiceError(.invalidIntegration, reason: "stored_app_id", "the stored integration has an invalid App ID")
            }
        }
        return ids
    }

    static func keyID(_ text: String) throws(ServiceError) -> [UInt8] {
        guard let bytes = Encoding.base64(text) else {
            throw ServiceError.malformed("key_id", "key_id must be standard base64")
        }
        guard bytes.count == 32 else { throw ServiceError.malformed("key_id_length", "key_id must decode to 32 bytes") }
        return bytes
    }

    static func object(_ text: String, field: String, limit: Int) throws(ServiceError) -> [UInt8] {
        // Refuse by length before decoding: base64 is 4/3 of the bytes.
        guard text.utf8.count <= (limit + 2) / 3 * 4 else {
            throw ServiceError.malformed("\(field)_too_large", "\(field) is larger than \(limit) bytes")
        }
        guard let bytes = Encoding.base64(text), !bytes.isEmpty else {
            throw ServiceError.malformed(field, "\(field) must be standard base64")
        }
        return bytes
    }

    /// Challenges are stored as SHA-256 of their bytes: a copy of the database reveals no
    /// outstanding challenge, and seeded test challenges of any length fit the 32-byte key.
    static func storedID(of challenge: [UInt8]) -> [UInt8] { Digest.sha256(challenge) }

    func challenge(_ text: String) throws(ServiceError) -> [UInt8] {
        if policy.allowsSeededChallenges, let bytes = Encoding.base64URL(text), (1...256).contains(bytes.count) {
            return bytes
        }
        return try Self.challenge(text)
    }

    static func challenge(_ text: String) throws(ServiceError) -> [UInt8] {
        guard text.utf8.count == 43, let bytes = Encoding.base64URL(text), bytes.count == 32 else {
            throw ServiceError.malformed("challenge", "challenge must be the 43-character base64url string as issued")
        }
        return bytes
    }
}

/// Device public keys as OpenSSL objects, built once per device rather than per assertion.
final class PublicKeyCache: Sendable {
    private let keys = Mutex<[[UInt8]: PublicKey]>([:])
    /// About 2 KB per OpenSSL key object: 10,000 keys bound the cache near 20 MB.
    private let capacity = 10_000

    func key(for device: DeviceRecord) -> PublicKey? {
        if let cached = keys.withLock({ $0[device.keyID] }) { return cached }
        guard let key = try? PublicKey(uncompressedPoint: device.publicKey, curve: .p256) else { return nil }
        keys.withLock { table in
            if table.count >= capacity { table.removeAll(keepingCapacity: true) }
            table[device.keyID] = key
        }
        return key
    }
}
