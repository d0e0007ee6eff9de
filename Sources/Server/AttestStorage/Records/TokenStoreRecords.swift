package import AttestCore

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
    /// The App Attest environments whose keys it accepts, sorted by name.
    package var environments: [AppAttestEnvironment]
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
        clientID: String, workspaceID: String, name: String, teamID: String, bundleIDs: [String], environments: [AppAttestEnvironment],
        status: IntegrationStatus, createdAt: Int64, revokedAt: Int64?, suspendedAt: Int64? = nil, maxLiveTokensPerDevice: Int? = nil,
        policy: IntegrationPolicy = IntegrationPolicy()
    ) {
        self.clientID = clientID
        self.workspaceID = workspaceID
        self.name = name
        self.teamID = teamID
        self.bundleIDs = bundleIDs
        self.environments = environments.sorted { $0.rawValue < $1.rawValue }
        self.status = status
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.suspendedAt = suspendedAt
        self.maxLiveTokensPerDevice = maxLiveTokensPerDevice
        self.policy = policy
    }
}

extension IntegrationRecord {
    /// What an operator is shown: `revoked`, `suspended` or `active` (a suspended integration is
    /// `active` in `status`, which says only whether it was revoked).
    package var condition: String {
        status == .revoked ? "revoked" : suspendedAt != nil ? "suspended" : "active"
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
        (self.requireValidReceipt, self.maxRiskMetric, self.maxNewKeysPerHour) = (requireValidReceipt, maxRiskMetric, maxNewKeysPerHour)
    }
}

/// What attestd concluded of a receipt.
package enum ReceiptVerdict: Sendable, Hashable, CustomStringConvertible {
    /// It verified.
    case valid
    /// The `receipt_*` check that refused it, by its stable identifier (`AttestError.Code`).
    case refused(check: String)

    /// As stored and shown: `valid`, or the check's identifier.
    package var description: String {
        switch self {
        case .valid: "valid"
        case .refused(let check): check
        }
    }

    /// The verdict `text` spells.
    package init(_ text: String) {
        self = text == "valid" ? .valid : .refused(check: text)
    }
}

/// What attestd knows of a device's newest receipt.
package struct ReceiptState: Sendable, Hashable {
    package var verdict: ReceiptVerdict
    /// `ATTEST` or `RECEIPT`; nil when it did not parse that far.
    package var type: ReceiptType?
    package var createdAt: Int64?
    package var expiresAt: Int64?
    /// Apple's fraud-risk metric (RECEIPT receipts carry it).
    package var riskMetric: Int?
    /// The last exchange with Apple that returned or confirmed it.
    package var refreshedAt: Int64?

    /// A receipt state.
    package init(verdict: ReceiptVerdict, type: ReceiptType?, createdAt: Int64?, expiresAt: Int64?, riskMetric: Int?, refreshedAt: Int64?) {
        (self.verdict, self.type, self.createdAt, self.expiresAt, self.riskMetric, self.refreshedAt) = (
            verdict, type, createdAt, expiresAt, riskMetric, refreshedAt
        )
    }
}

/// One device as `attestctl device list` shows it.
package struct DeviceSummary: Sendable, Equatable {
    package var device: DeviceRecord
    /// Tokens of this key that have not expired.
    package var liveTokens: Int

    /// A device and its live token count.
    package init(device: DeviceRecord, liveTokens: Int) { (self.device, self.liveTokens) = (device, liveTokens) }
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
    package var environment: AppAttestEnvironment
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
    /// SHA-256 of its credential certificate (the attestation's leaf), which every receipt stored
    /// for it must name; nil for keys attested before attestd recorded it.
    package var credentialSHA256: [UInt8]?

    /// Apple's App Attestation root's fingerprint, the anchor of every production device (and of
    /// keys attested before attestd recorded the anchor). A test compares it with `TrustAnchor`'s.
    package static let appleRootAnchor = "1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932"

    package init(
        keyID: [UInt8], clientID: String, publicKey: [UInt8], counter: UInt32, environment: AppAttestEnvironment, receipt: [UInt8],
        status: DeviceStatus, createdAt: Int64, updatedAt: Int64, trustAnchor: String = DeviceRecord.appleRootAnchor,
        appID: String? = nil, receiptState: ReceiptState? = nil, credentialSHA256: [UInt8]? = nil
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
        self.credentialSHA256 = credentialSHA256
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
    /// The debug token that minted it (`DebugTokenRecord.id`); nil for an attested device's.
    package var debugTokenID: String?

    package init(
        tokenHash: [UInt8], clientID: String, workspaceID: String, keyID: [UInt8], scope: String, issuedAt: Int64, expiresAt: Int64,
        debugTokenID: String? = nil
    ) {
        (self.tokenHash, self.clientID, self.workspaceID, self.keyID, self.scope, self.issuedAt, self.expiresAt) = (
            tokenHash, clientID, workspaceID, keyID, scope, issuedAt, expiresAt
        )
        self.debugTokenID = debugTokenID
    }

    /// Minted for a debug token, not an attested device.
    package var isDebug: Bool { debugTokenID != nil }
}

/// A challenge as stored, read without consuming it.
package struct ChallengeState: Sendable, Equatable {
    package var clientID: String
    package var expiresAt: Int64
    package var consumed: Bool

    package init(clientID: String, expiresAt: Int64, consumed: Bool) {
        (self.clientID, self.expiresAt, self.consumed) = (clientID, expiresAt, consumed)
    }
}

/// At most `maximum` keys registered by one integration since `since` (`--max-new-keys-per-hour`).
package struct NewKeyCap: Sendable, Equatable {
    package var maximum: Int
    package var since: Int64

    package init(maximum: Int, since: Int64) { (self.maximum, self.since) = (maximum, since) }
}

/// The outcome of registering a device and minting its first token in one transaction.
package enum RegistrationOutcome: Sendable, Equatable {
    case registered
    /// The integration holds its cap of new keys; nothing else changed but the challenge, spent.
    case newKeyCapReached
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
/// so their client IDs stay burned), every device with its counter and status, the tokens still
/// valid, the audit log and the admin keys (revoked ones too). Challenges are not copied: they
/// live five minutes and a device asks again; nor are console sessions: an admin signs in again.
package struct StoreSnapshot: Sendable, Equatable {
    package var integrations: [IntegrationRecord]
    package var devices: [DeviceRecord]
    package var tokens: [TokenRecord]
    package var auditEntries: [AuditEntry]
    package var adminKeys: [AdminKeyRecord]
    package var debugTokens: [DebugTokenRecord]
    /// The hourly verification counts (the console's charts).
    package var verificationCounts: [VerificationCount]

    /// A snapshot of these records.
    package init(
        integrations: [IntegrationRecord], devices: [DeviceRecord], tokens: [TokenRecord], auditEntries: [AuditEntry] = [],
        adminKeys: [AdminKeyRecord] = [], debugTokens: [DebugTokenRecord] = [], verificationCounts: [VerificationCount] = []
    ) {
        (self.integrations, self.devices, self.tokens, self.auditEntries) = (integrations, devices, tokens, auditEntries)
        (self.adminKeys, self.debugTokens, self.verificationCounts) = (adminKeys, debugTokens, verificationCounts)
    }
}

/// One administrative action, as `attestctl audit list` shows it.
package struct AuditEntry: Sendable, Equatable {
    /// Unix seconds.
    package var at: Int64
    /// The person (`SUDO_USER`, `USER` or `--actor`) and tool behind it, e.g. `alice (attestctl)`.
    package var actor: String
    /// What was done.
    package var action: AuditAction
    /// What it was done to: a client ID, a key ID (hex), a token's SHA-256 (hex).
    package var target: String
    /// What came of it, for people (counts, settings); never a secret.
    package var detail: String
    /// The workspace an admin key acted in (the admin API and the console); nil for attestctl.
    package var workspaceID: String?

    /// An entry.
    package init(at: Int64, actor: String, action: AuditAction, target: String, detail: String, workspaceID: String? = nil) {
        (self.at, self.actor, self.action, self.target, self.detail) = (at, actor, action, target, detail)
        self.workspaceID = workspaceID
    }
}

/// The closed set of administrative actions the audit log records, by their stable spelling.
package enum AuditAction: String, Sendable, CaseIterable {
    case integrationCreate = "integration.create"
    case integrationUpdate = "integration.update"
    case integrationRevoke = "integration.revoke"
    case integrationSuspend = "integration.suspend"
    case integrationResume = "integration.resume"
    case integrationSetFraudKey = "integration.set-fraud-key"
    case tokenRevoke = "token.revoke"
    case deviceBlock = "device.block"
    case deviceUnblock = "device.unblock"
    case adminKeyCreate = "admin-key.create"
    case adminKeyRevoke = "admin-key.revoke"
    case adminKeyDisable = "admin-key.disable"
    case adminKeyEnable = "admin-key.enable"
    case ownershipOffer = "ownership.offer"
    case ownershipWithdraw = "ownership.withdraw"
    case ownershipTransfer = "ownership.transfer"
    case consoleSignIn = "console.sign-in"
    case debugTokenCreate = "debug-token.create"
    case debugTokenRevoke = "debug-token.revoke"
    /// `attestctl store copy` moved a SQLite file's data to PostgreSQL (written in the file it left).
    case storeMove = "store.move"

    /// Every action but sign-ins: what a workspace admin reviews first.
    package static let changes = Set(allCases).subtracting([.consoleSignIn])

    /// The actions a filter names: `changes`, `sign-ins`, or a comma-separated list of actions;
    /// nil when a name is none of them (the admin API's `action` and attestctl's `--action`).
    package static func named(_ text: String) -> Set<AuditAction>? {
        switch text {
        case "changes": return changes
        case "sign-ins": return [.consoleSignIn]
        default:
            var actions: Set<AuditAction> = []
            for name in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let action = AuditAction(rawValue: String(name)) else { return nil }
                actions.insert(action)
            }
            return actions
        }
    }
}

/// The audit row a change writes in the change's own transaction: who did what to what, and the
/// detail the change's outcome gives (nil writes no row, e.g. when there was nothing to change).
package struct AuditNote<Outcome>: Sendable {
    package let at: Int64
    package let actor: String
    package let action: AuditAction
    package let target: String
    /// The workspace the actor acted in (an admin key's), nil for attestctl.
    package let workspaceID: String?
    package let detail: @Sendable (Outcome) -> String?

    /// A note of `action` on `target` by `actor` at `at`, its detail from the outcome.
    package init(
        at: Int64, actor: String, action: AuditAction, target: String, workspaceID: String? = nil,
        detail: @escaping @Sendable (Outcome) -> String?
    ) {
        (self.at, self.actor, self.action, self.target, self.detail) = (at, actor, action, target, detail)
        self.workspaceID = workspaceID
    }

    /// This note, in `workspaceID` unless it names a workspace already: attestctl's and the
    /// gateway's changes to a workspace's device or token are shown to that workspace's admins.
    package func inWorkspace(_ workspaceID: String?) -> AuditNote {
        AuditNote(at: at, actor: actor, action: action, target: target, workspaceID: self.workspaceID ?? workspaceID, detail: detail)
    }

    /// The entry for `outcome`, or nil when it records none.
    package func entry(for outcome: Outcome) -> AuditEntry? {
        detail(outcome).map { AuditEntry(at: at, actor: actor, action: action, target: target, detail: $0, workspaceID: workspaceID) }
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
    /// Integrations suspended (not revoked).
    package var suspendedIntegrations: Int = 0
    /// Bytes the database takes on disk (SQLite: the file and its WAL; PostgreSQL: the database).
    package var bytes: Int64

    /// Statistics with these values.
    package init(activeIntegrations: Int, activeDevices: Int, revokedIntegrations: Int, suspendedIntegrations: Int = 0, bytes: Int64) {
        (self.activeIntegrations, self.activeDevices, self.revokedIntegrations, self.suspendedIntegrations, self.bytes) = (
            activeIntegrations, activeDevices, revokedIntegrations, suspendedIntegrations, bytes
        )
    }
}

/// A connection pool's state at one moment (`/metrics`).
package struct PoolStatistics: Sendable, Equatable {
    package var size: Int
    /// Connections lent to requests.
    package var inUse: Int
    /// Requests waiting for a connection.
    package var waiting: Int

    package init(size: Int, inUse: Int, waiting: Int) { (self.size, self.inUse, self.waiting) = (size, inUse, waiting) }
}

/// What `revokeIntegration` cut off.
package struct RevocationSummary: Sendable, Equatable {
    /// False when the integration was already revoked (the call changed nothing).
    package var changed: Bool
    package var tokensRevoked: Int
    package var devicesBlocked: Int

    package init(changed: Bool, tokensRevoked: Int, devicesBlocked: Int) {
        (self.changed, self.tokensRevoked, self.devicesBlocked) = (changed, tokensRevoked, devicesBlocked)
    }
}

/// What a refresh reads before it verifies the assertion; nil where no such row exists.
package struct RefreshInputs: Sendable, Equatable {
    package var integration: IntegrationRecord?
    package var challenge: ChallengeState?
    package var device: DeviceRecord?

    package init(integration: IntegrationRecord?, challenge: ChallengeState?, device: DeviceRecord?) {
        (self.integration, self.challenge, self.device) = (integration, challenge, device)
    }
}

/// What an unblock found: a blocked key of an active integration becomes active again; a revoked
/// integration's keys never do.
package enum DeviceUnblock: Sendable, Equatable {
    case unblocked
    /// The key was not blocked: nothing changed.
    case notBlocked
    /// The key's integration is revoked: its keys stay blocked for good.
    case integrationRevoked
    case notFound
}
