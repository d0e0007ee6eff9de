/// Whether an integration may still be used. Revocation is permanent.
package enum IntegrationStatus: String, Sendable, Hashable {
    case active
    case revoked
}

/// Whether an integration can be used right now, as a transaction sees it.
enum IntegrationState: Equatable {
    case active, suspended, revoked, missing

    init(status: String?, suspended: Bool) {
        switch status {
        case "active"?: self = suspended ? .suspended : .active
        case nil: self = .missing
        default: self = .revoked
        }
    }
}

/// One registered app integration.
package struct IntegrationRecord: Sendable, Hashable {
    /// Public client ID, `clid_` + random; never reused.
    package var clientID: String
    package var workspaceID: String
    package var name: String
    /// Apple Developer Team ID (validated before it gets here).
    package var teamID: String
    /// 1 to 32 bundle IDs, sorted.
    package var bundleIDs: [String]
    /// "development" and/or "production", sorted.
    package var environments: [String]
    package var status: IntegrationStatus
    package var createdAt: Int64
    package var revokedAt: Int64?
    /// Set while the integration is suspended (paused, reversible); nil otherwise.
    package var suspendedAt: Int64?
    /// When set, a refresh keeps only the device's newest N tokens.
    package var maxLiveTokensPerDevice: Int?
    /// What the integration requires of receipts and risk (default: nothing).
    package var policy = IntegrationPolicy()

    package init(
        clientID: String, workspaceID: String, name: String, teamID: String, bundleIDs: [String], environments: [String],
        status: IntegrationStatus, createdAt: Int64, revokedAt: Int64?, suspendedAt: Int64? = nil, maxLiveTokensPerDevice: Int? = nil,
        policy: IntegrationPolicy = IntegrationPolicy()
    ) {
        self.clientID = clientID
        self.workspaceID = workspaceID
        self.name = name
        self.teamID = teamID
        self.bundleIDs = bundleIDs
        self.environments = environments
        self.status = status
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.suspendedAt = suspendedAt
        self.maxLiveTokensPerDevice = maxLiveTokensPerDevice
        self.policy = policy
    }
}

/// An integration's policy on Apple's receipts and the fraud-risk metric.
package struct IntegrationPolicy: Sendable, Hashable {
    /// Refuse an attestation whose receipt does not verify (with the receipt's check code).
    package var requireValidReceipt = false
    /// Refuse a refresh while the device's latest risk metric exceeds this.
    package var maxRiskMetric: Int?
    /// Refuse new keys past this many in the last hour.
    package var maxNewKeysPerHour: Int?

    /// No requirement.
    package init(requireValidReceipt: Bool = false, maxRiskMetric: Int? = nil, maxNewKeysPerHour: Int? = nil) {
        self.requireValidReceipt = requireValidReceipt
        self.maxRiskMetric = maxRiskMetric
        self.maxNewKeysPerHour = maxNewKeysPerHour
    }
}

/// What attestd knows of a device's newest receipt.
package struct ReceiptState: Sendable, Hashable {
    /// `valid`, or the `receipt_*` check that refused it.
    package var verdict: String
    /// `ATTEST` or `RECEIPT`; nil when it did not parse that far.
    package var type: String?
    package var createdAt: Int64?
    package var expiresAt: Int64?
    /// Apple's fraud-risk metric (RECEIPT receipts carry it).
    package var riskMetric: Int?
    /// The last exchange with Apple that returned or confirmed it.
    package var refreshedAt: Int64?

    /// A receipt state.
    package init(verdict: String, type: String?, createdAt: Int64?, expiresAt: Int64?, riskMetric: Int?, refreshedAt: Int64?) {
        self.verdict = verdict
        self.type = type
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.riskMetric = riskMetric
        self.refreshedAt = refreshedAt
    }
}

/// One device as `attestctl device list` shows it.
package struct DeviceSummary: Sendable, Equatable {
    package var device: DeviceRecord
    /// Tokens of this key that have not expired.
    package var liveTokens: Int

    /// A device and its live token count.
    package init(device: DeviceRecord, liveTokens: Int) {
        self.device = device
        self.liveTokens = liveTokens
    }
}

/// Whether a device key may still refresh tokens.
package enum DeviceStatus: String, Sendable, Hashable {
    case active
    case revoked
}

/// One attested App Attest key.
package struct DeviceRecord: Sendable, Hashable {
    package var keyID: [UInt8]
    package var clientID: String
    /// `04 || X || Y`.
    package var publicKey: [UInt8]
    package var counter: UInt32
    package var environment: String
    package var receipt: [UInt8]
    package var status: DeviceStatus
    package var createdAt: Int64
    package var updatedAt: Int64
    /// SHA-256 (lowercase hex) of the root its attestation chained to; refreshes need the same root.
    package var trustAnchor: String
    /// The App ID (`TEAMID.bundle`) it attested as; nil for keys attested before attestd recorded it.
    package var appID: String?
    /// Its newest receipt's verdict and fields; nil for keys attested before attestd checked receipts.
    package var receiptState: ReceiptState?

    /// Apple's App Attestation root's fingerprint, the anchor of every production device (and of
    /// keys attested before attestd recorded the anchor). A test compares it with `TrustAnchor`'s.
    package static let appleRootAnchor = "1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932"

    package init(
        keyID: [UInt8], clientID: String, publicKey: [UInt8], counter: UInt32, environment: String, receipt: [UInt8],
        status: DeviceStatus, createdAt: Int64, updatedAt: Int64, trustAnchor: String = DeviceRecord.appleRootAnchor,
        appID: String? = nil, receiptState: ReceiptState? = nil
    ) {
        self.keyID = keyID
        self.clientID = clientID
        self.publicKey = publicKey
        self.counter = counter
        self.environment = environment
        self.receipt = receipt
        self.status = status
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.trustAnchor = trustAnchor
        self.appID = appID
        self.receiptState = receiptState
    }
}

/// One issued access token. Only the SHA-256 of the token is ever stored.
package struct TokenRecord: Sendable, Hashable {
    package var tokenHash: [UInt8]
    package var clientID: String
    package var workspaceID: String
    package var keyID: [UInt8]
    package var scope: String
    package var issuedAt: Int64
    package var expiresAt: Int64

    package init(
        tokenHash: [UInt8], clientID: String, workspaceID: String, keyID: [UInt8], scope: String, issuedAt: Int64, expiresAt: Int64
    ) {
        self.tokenHash = tokenHash
        self.clientID = clientID
        self.workspaceID = workspaceID
        self.keyID = keyID
        self.scope = scope
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}

/// A challenge as stored, read without consuming it.
package struct ChallengeState: Sendable, Equatable {
    package var clientID: String
    package var expiresAt: Int64
    package var consumed: Bool

    package init(clientID: String, expiresAt: Int64, consumed: Bool) {
        self.clientID = clientID
        self.expiresAt = expiresAt
        self.consumed = consumed
    }
}

/// The outcome of registering a device and minting its first token in one transaction.
package enum RegistrationOutcome: Sendable, Equatable {
    case registered
    /// The challenge was consumed by another request first; nothing else changed.
    case challengeUsed
    /// The integration was revoked before the transaction (re-checked inside it).
    case integrationRevoked
    /// The integration was suspended before the transaction (re-checked inside it).
    case integrationSuspended
    /// The key ID is already registered; nothing was changed.
    case keyExists(DeviceStatus)
}

/// The outcome of advancing a device counter and minting a token in one transaction.
package enum CounterAdvance: Sendable, Equatable {
    case advanced
    /// The challenge was consumed by another request first; nothing else changed.
    case challengeUsed
    case integrationRevoked
    case integrationSuspended
    case deviceBlocked
    /// Another request advanced the counter first (compare-and-set lost); no token minted.
    case counterChanged
}

/// Everything `attestctl store copy` moves between stores: every integration (revoked ones too,
/// so their client IDs stay burned), every device with its counter and status, and the tokens
/// still valid. Challenges are not copied: they live five minutes and a device asks again.
package struct StoreSnapshot: Sendable, Equatable {
    package var integrations: [IntegrationRecord]
    package var devices: [DeviceRecord]
    package var tokens: [TokenRecord]

    /// A snapshot of these records.
    package init(integrations: [IntegrationRecord], devices: [DeviceRecord], tokens: [TokenRecord]) {
        self.integrations = integrations
        self.devices = devices
        self.tokens = tokens
    }
}

/// One administrative action, as `attestctl audit list` shows it.
package struct AuditEntry: Sendable, Equatable {
    /// Unix seconds.
    package var at: Int64
    /// The person (`SUDO_USER`, `USER` or `--actor`) and tool behind it, e.g. `alice (attestctl)`.
    package var actor: String
    /// What was done: `integration.create`, `integration.revoke`, `token.revoke`, ...
    package var action: String
    /// What it was done to: a client ID, a key ID (hex), a token's SHA-256 (hex).
    package var target: String
    /// What came of it, for people (counts, settings); never a secret.
    package var detail: String

    /// An entry.
    package init(at: Int64, actor: String, action: String, target: String, detail: String) {
        self.at = at
        self.actor = actor
        self.action = action
        self.target = target
        self.detail = detail
    }
}

/// What the metrics gauges show of the store.
package struct StoreStatistics: Sendable, Equatable {
    /// Integrations not revoked.
    package var activeIntegrations: Int
    /// Device keys not blocked.
    package var activeDevices: Int
    /// Integrations revoked (permanently).
    package var revokedIntegrations: Int
    /// Bytes the database takes on disk (SQLite: the file and its WAL; PostgreSQL: the database).
    package var bytes: Int64

    /// Statistics with these values.
    package init(activeIntegrations: Int, activeDevices: Int, revokedIntegrations: Int, bytes: Int64) {
        self.activeIntegrations = activeIntegrations
        self.activeDevices = activeDevices
        self.revokedIntegrations = revokedIntegrations
        self.bytes = bytes
    }
}

/// What `revokeIntegration` cut off.
package struct RevocationSummary: Sendable, Equatable {
    /// False when the integration was already revoked (the call changed nothing).
    package var changed: Bool
    package var tokensRevoked: Int
    package var devicesBlocked: Int

    package init(changed: Bool, tokensRevoked: Int, devicesBlocked: Int) {
        self.changed = changed
        self.tokensRevoked = tokensRevoked
        self.devicesBlocked = devicesBlocked
    }
}

/// What a refresh reads before it verifies the assertion; nil where no such row exists.
package struct RefreshInputs: Sendable, Equatable {
    package var integration: IntegrationRecord?
    package var challenge: ChallengeState?
    package var device: DeviceRecord?

    package init(integration: IntegrationRecord?, challenge: ChallengeState?, device: DeviceRecord?) {
        self.integration = integration
        self.challenge = challenge
        self.device = device
    }
}

extension TokenStore {
    /// Answered at once, for a store where a lookup costs no round trip (SQLite).
    package func activeToken(
        hash: [UInt8], at time: Int64, then reply: @escaping @Sendable (Result<TokenRecord?, StorageError>) -> Void
    ) {
        do throws(StorageError) {
            reply(.success(try activeToken(hash: hash, at: time)))
        } catch {
            reply(.failure(error))
        }
    }

    /// Three reads, for a store where a read costs no round trip (SQLite).
    package func refreshInputs(clientID: String, challengeID: [UInt8], keyID: [UInt8]) throws(StorageError) -> RefreshInputs {
        RefreshInputs(
            integration: try integration(clientID: clientID), challenge: try challenge(id: challengeID), device: try device(keyID: keyID))
    }
}

/// Everything the token service persists, each operation one transaction.
///
/// A protocol so that a PostgreSQL backend can follow the SQLite one for deployments that outgrow
/// one machine; every method's atomicity is part of the contract.
package protocol TokenStore: Sendable {
    /// Inserts a new integration; `constraint` if the client ID exists.
    func insertIntegration(_ integration: IntegrationRecord) throws(StorageError)
    /// The integration with this client ID.
    func integration(clientID: String) throws(StorageError) -> IntegrationRecord?
    /// All integrations, oldest first.
    func integrations() throws(StorageError) -> [IntegrationRecord]
    /// Revokes permanently: status, all outstanding tokens deleted, all devices blocked, in one
    /// transaction. Nil when no such integration exists. Idempotent.
    func revokeIntegration(clientID: String, at time: Int64) throws(StorageError) -> RevocationSummary?
    /// Stores a new challenge when the integration `clientID` is active (not revoked, not
    /// suspended); false, storing nothing, when it is not or does not exist. One statement, so
    /// that a challenge costs one round trip to a database server.
    func insertChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool
    /// Stores a challenge, replacing any earlier one with the same ID (test-mode seeding only,
    /// where recorded devices reuse fixed client data); false, as `insertChallenge`, when the
    /// integration is not active.
    func replaceChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool
    /// The challenge with this ID, without consuming it.
    func challenge(id: [UInt8]) throws(StorageError) -> ChallengeState?
    /// Marks the challenge consumed (compare-and-set); true when this call consumed it, false
    /// when it was consumed already or does not exist.
    func consumeChallenge(id: [UInt8], at time: Int64) throws(StorageError) -> Bool
    /// In one transaction: consumes the challenge (compare-and-set: unconsumed), then re-checks
    /// the integration and the key ID and registers the device with its first token. The
    /// consumption is committed whatever the outcome, except `challengeUsed`.
    func registerDevice(
        _ device: DeviceRecord, firstToken: TokenRecord, consumingChallenge challengeID: [UInt8], at time: Int64
    ) throws(StorageError) -> RegistrationOutcome
    /// The device with this key ID.
    func device(keyID: [UInt8]) throws(StorageError) -> DeviceRecord?
    /// What a refresh reads before it verifies: what `integration(clientID:)`, `challenge(id:)`
    /// and `device(keyID:)` answer, read together (PostgreSQL: one round trip instead of three).
    func refreshInputs(clientID: String, challengeID: [UInt8], keyID: [UInt8]) throws(StorageError) -> RefreshInputs
    /// In one transaction: consumes the challenge (compare-and-set), re-checks the integration's
    /// and the device's status, compare-and-sets the counter from `previous` to `counter`, and
    /// stores `token`; with `keepingLatest` N, deletes the device's older tokens beyond the newest
    /// N. The consumption is committed whatever the outcome, except `challengeUsed`.
    func advanceCounter(
        keyID: [UInt8], from previous: UInt32, to counter: UInt32, at time: Int64, token: TokenRecord,
        consumingChallenge challengeID: [UInt8], keepingLatest: Int?
    ) throws(StorageError) -> CounterAdvance
    /// The unexpired token with this hash whose integration is active (not revoked, not suspended)
    /// and whose device is not blocked.
    func activeToken(hash: [UInt8], at time: Int64) throws(StorageError) -> TokenRecord?
    /// `activeToken(hash:at:)` answered through `reply`, exactly once: at once, or later from
    /// another thread while the caller goes on (a store whose lookup is a round trip).
    func activeToken(hash: [UInt8], at time: Int64, then reply: @escaping @Sendable (Result<TokenRecord?, StorageError>) -> Void)
    /// Deletes expired tokens and challenges that expired before `time`; returns how many rows went.
    func purgeExpired(at time: Int64) throws(StorageError) -> Int
    /// Counts and size for the metrics gauges.
    func statistics() throws(StorageError) -> StoreStatistics
    /// Suspends (`at` a time) or resumes (`at` nil) an integration: nil when it does not exist,
    /// false when it is revoked (revocation is final and suspension means nothing then).
    func setSuspended(clientID: String, at time: Int64?) throws(StorageError) -> Bool?
    /// Deletes the token with this hash; true when one was deleted.
    func revokeToken(hash: [UInt8]) throws(StorageError) -> Bool
    /// Blocks one device key: its tokens stop working at once (they are deleted) and it can never
    /// refresh or attest again. Nil when no such key; otherwise how many tokens went.
    func blockDevice(keyID: [UInt8], at time: Int64) throws(StorageError) -> Int?
    /// Replaces an integration's receipt and risk policy (and its live-token limit); nil when unknown.
    func updatePolicy(clientID: String, policy: IntegrationPolicy, maxLiveTokensPerDevice: Int?) throws(StorageError) -> Bool?
    /// The integration's devices, oldest first, with how many unexpired tokens each holds.
    func deviceSummaries(clientID: String, at time: Int64) throws(StorageError) -> [DeviceSummary]
    /// Unexpired tokens of one key.
    func liveTokenCount(keyID: [UInt8], at time: Int64) throws(StorageError) -> Int
    /// Keys the integration registered at or after `since`.
    func newKeyCount(clientID: String, since: Int64) throws(StorageError) -> Int
    /// Stores a device's new receipt (from Apple) and what it says.
    func updateReceipt(keyID: [UInt8], receipt: [UInt8], state: ReceiptState) throws(StorageError)
    /// Records an exchange with Apple that confirmed the receipt (304) at `time`.
    func touchReceipt(keyID: [UInt8], at time: Int64) throws(StorageError)
    /// Stores the integration's sealed DeviceCheck key; nil when the integration is unknown.
    func setFraudKey(clientID: String, keyID: String, sealedKey: [UInt8], at time: Int64) throws(StorageError) -> Bool?
    /// The integration's DeviceCheck key ID and sealed key.
    func fraudKey(clientID: String) throws(StorageError) -> (keyID: String, sealedKey: [UInt8])?
    /// Active devices of active integrations with a DeviceCheck key whose receipt was last refreshed
    /// (or, never refreshed, created) at or before `dueBefore`, oldest first.
    func receiptRefreshCandidates(dueBefore: Int64, limit: Int) throws(StorageError) -> [DeviceRecord]
    /// Appends an administrative action to the audit log.
    func appendAudit(_ entry: AuditEntry) throws(StorageError)
    /// The audit log from `since` (Unix seconds) on, oldest first, at most `limit` entries.
    func auditLog(since: Int64, limit: Int) throws(StorageError) -> [AuditEntry]
    /// Reads every integration, device and token unexpired at `time`, consistently (one transaction).
    func snapshot(at time: Int64) throws(StorageError) -> StoreSnapshot
    /// Writes `snapshot` into this store in one transaction; `notEmpty` (and nothing written)
    /// when the store holds any integration already.
    func restore(_ snapshot: StoreSnapshot) throws(StorageError)
    /// Takes one token from the bucket every node shares under `bucket` (refilled at `perSecond`
    /// up to `burst`, in one transaction): nil when taken, or the seconds to wait.
    func takeSharedToken(bucket: String, perSecond: Double, burst: Double, at now: Double) throws(StorageError) -> Int?
    /// Called once at a clean stop, after the last request: SQLite folds its write-ahead log into
    /// the database file (and empties the log), so that a stopped database is one complete file;
    /// PostgreSQL closes its connections.
    func close() throws(StorageError)
    /// Reads the whole database for damage (`attestctl check`): SQLite's quick_check; PostgreSQL
    /// checks its own pages, so there it only confirms the server answers.
    func checkIntegrity() throws(StorageError)
    /// Throws when the storage cannot serve requests now (`/readyz`): a PostgreSQL server that
    /// does not answer, a SQLite file that cannot be read.
    func checkAvailable() throws(StorageError)
}
