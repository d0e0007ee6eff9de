package import AttestCore
import AttestCrypto
package import AttestObservability
package import AttestStorage

/// Who calls the admin API: an admin key (presented as a bearer credential, or behind a console
/// session) with its workspace, role and name.
package struct AdminPrincipal: Sendable, Equatable {
    /// The key's public ID (`admk_...`).
    package let keyID: String
    /// The key's name: the audit log's actor.
    package let name: String
    package let workspaceID: String
    package let role: AdminRole

    /// Who acts, as audit rows and log lines name it: the key's name and its public ID, so that
    /// two keys of one name (one revoked, one live) are told apart.
    package var actor: String { "\(name) (\(keyID))" }

    /// The principal of a stored key.
    package init(_ key: AdminKeyRecord) {
        keyID = key.id
        name = key.name
        workspaceID = key.workspaceID
        role = key.role
    }
}

/// What bounds console sessions (review L3, L4).
package struct ConsoleSessionPolicy: Sendable, Hashable {
    /// A session unused this long ends (30 minutes unless configured), within its 8 hours.
    package var idleSeconds: Int64
    /// Live sessions one key holds at most: a new sign-in ends the oldest beyond it.
    package var maximumPerKey: Int
    /// Sign-ins per key, and per client address, on each node (429 with Retry-After past them).
    package var signInsPerKey: RateLimit
    package var signInsPerAddress: RateLimit

    package init(
        idleSeconds: Int64 = 1800, maximumPerKey: Int = 10, signInsPerKey: RateLimit = RateLimit(perSecond: 10.0 / 60, burst: 10),
        signInsPerAddress: RateLimit = RateLimit(perSecond: 30.0 / 60, burst: 30)
    ) {
        self.idleSeconds = idleSeconds
        self.maximumPerKey = maximumPerKey
        self.signInsPerKey = signInsPerKey
        self.signInsPerAddress = signInsPerAddress
    }

    /// When a session used at `now`, begun at `createdAt`, expires: idle timeout from now, within
    /// the absolute limit.
    package func expiry(createdAt: Int64, now: Int64) -> Int64 {
        min(createdAt + WorkspaceAdmin.sessionSeconds, now + idleSeconds)
    }
}

/// The workspace admins' use cases (the admin API and the console), scoped to one workspace: each
/// call takes the authenticated principal, checks its role, checks that the target belongs to
/// its workspace, and makes the change through `IntegrationAdmin`, whose audit row (actor: the
/// key's name; the workspace) is written in the change's own transaction.
///
/// Why another workspace's integration, device or token answers exactly as an unknown one: a key
/// must learn nothing of other workspaces, not even that an ID exists.
package struct WorkspaceAdmin: Sendable {
    /// What reading needs (integrations, devices, the audit log).
    package static let readRole = AdminRole.user
    /// What changing integrations, devices and tokens needs.
    package static let changeRole = AdminRole.admin
    /// What managing the workspace's admin keys needs (never above one's own role).
    package static let keyRole = AdminRole.owner
    /// How long a console session lasts from sign-in, whatever its use (absolute: 8 hours, a
    /// working day, as the seed's Console and Firebase's keep an admin signed in).
    package static let sessionSeconds: Int64 = 8 * 3600

    let store: any AdminStore & AdminKeyStore & DebugTokenStore & VerificationCountStore
    package let clock: any WallClock
    let random: any RandomSource
    let logger: Logger?
    /// The console sessions' idle timeout, number per key and sign-in rates.
    package let sessions: ConsoleSessionPolicy
    /// This node's sign-in buckets (per key and per address).
    let signIns: RateLimiter
    /// Whether the operator lets workspace admins unblock devices (`--device-unblock`).
    package let devicesUnblockable: Bool

    package init(
        store: any AdminStore & AdminKeyStore & DebugTokenStore & VerificationCountStore, clock: any WallClock = SystemWallClock(),
        random: any RandomSource = SystemRandom(),
        logger: Logger? = nil, sessions: ConsoleSessionPolicy = ConsoleSessionPolicy(), devicesUnblockable: Bool = false
    ) {
        self.devicesUnblockable = devicesUnblockable
        self.store = store
        self.clock = clock
        self.random = random
        self.logger = logger
        self.sessions = sessions
        signIns = RateLimiter(maximumAddresses: 10_000)
    }

    /// What `principal` may do, as `/admin/v1/me` and the console's session say it: its role's
    /// levers, and unblocking where the operator allows it.
    package func capabilities(_ principal: AdminPrincipal) -> [(String, Bool)] {
        [
            ("can_change", principal.role >= Self.changeRole), ("can_manage_keys", principal.role >= Self.keyRole),
            ("can_manage_debug_tokens", principal.role >= Self.debugTokenRole),
            ("can_unblock_devices", principal.role >= Self.changeRole && devicesUnblockable),
        ]
    }

    /// The integration use cases acting as `principal`, auditing in its workspace under its name.
    func admin(_ principal: AdminPrincipal) -> IntegrationAdmin {
        IntegrationAdmin(
            store: store, clock: clock, random: random, logger: logger, actor: principal.actor, workspaceID: principal.workspaceID)
    }

    /// Refuses a principal whose role is below `needed`.
    func require(_ principal: AdminPrincipal, _ needed: AdminRole, to action: String) throws(ServiceError) {
        guard principal.role >= needed else { throw ServiceError.forbiddenRole(principal.role, needs: needed, to: action) }
    }

    // MARK: Integrations

    /// The workspace's integrations with their device and live-token counts, oldest first.
    package func integrations(_ principal: AdminPrincipal) throws(ServiceError) -> [(IntegrationRecord, IntegrationCounts)] {
        try require(principal, Self.readRole, to: "read integrations")
        let now = clock.now()
        return try stored { () throws(StorageError) in
            let records = try store.integrations(workspaceID: principal.workspaceID)
            let counts = try store.integrationCounts(workspaceID: principal.workspaceID, at: now)
            return records.map { ($0, counts[$0.clientID] ?? IntegrationCounts(devices: 0, liveTokens: 0)) }
        }
    }

    /// One of the workspace's integrations; `integration_not_found` for an unknown ID and for
    /// another workspace's alike.
    package func integration(_ principal: AdminPrincipal, clientID: String) throws(ServiceError) -> IntegrationRecord {
        try require(principal, Self.readRole, to: "read integrations")
        return try owned(principal, clientID)
    }

    /// The integration when it is the principal's workspace's (no role check).
    func owned(_ principal: AdminPrincipal, _ clientID: String) throws(ServiceError) -> IntegrationRecord {
        guard let record = try stored({ () throws(StorageError) in try store.integration(clientID: clientID) }),
            record.workspaceID == principal.workspaceID
        else { throw ServiceError.integrationNotFound }
        return record
    }

    /// Creates an integration in the principal's workspace, validated as `attestctl` does.
    package func create(
        _ principal: AdminPrincipal, name: String, teamID: String, bundleIDs: [String], environments: Set<AppAttestEnvironment>,
        maxLiveTokensPerDevice: Int?, policy: IntegrationPolicy
    ) throws(ServiceError) -> IntegrationRecord {
        try require(principal, Self.changeRole, to: "create integrations")
        return try admin(principal).create(
            workspaceID: principal.workspaceID, name: name, teamID: teamID, bundleIDs: bundleIDs, environments: environments,
            maxLiveTokensPerDevice: maxLiveTokensPerDevice, policy: policy)
    }

    /// Revokes one of the workspace's integrations permanently.
    package func revoke(_ principal: AdminPrincipal, clientID: String) throws(ServiceError) -> RevocationSummary {
        try require(principal, Self.changeRole, to: "revoke integrations")
        _ = try owned(principal, clientID)
        guard let summary = try admin(principal).revoke(clientID: clientID) else { throw ServiceError.integrationNotFound }
        return summary
    }

    /// Suspends or resumes one of the workspace's integrations; `integration_revoked` when it is revoked.
    package func setSuspended(_ principal: AdminPrincipal, clientID: String, _ suspended: Bool) throws(ServiceError) -> IntegrationRecord {
        try require(principal, Self.changeRole, to: suspended ? "suspend integrations" : "resume integrations")
        _ = try owned(principal, clientID)
        switch try admin(principal).setSuspended(clientID: clientID, suspended) {
        case nil: throw ServiceError.integrationNotFound
        case false?: throw ServiceError.integrationRevoked
        case true?: return try owned(principal, clientID)
        }
    }

    /// Replaces one of the workspace's integrations' policy and live-token limit.
    package func updatePolicy(
        _ principal: AdminPrincipal, clientID: String, policy: IntegrationPolicy, maxLiveTokensPerDevice: Int?
    ) throws(ServiceError) -> IntegrationRecord {
        try require(principal, Self.changeRole, to: "update integrations")
        _ = try owned(principal, clientID)
        guard let record = try admin(principal).update(clientID: clientID, policy: policy, maxLiveTokensPerDevice: maxLiveTokensPerDevice)
        else { throw ServiceError.integrationNotFound }
        return record
    }

    // MARK: Devices and tokens

    /// The devices of one of the workspace's integrations.
    package func devices(_ principal: AdminPrincipal, clientID: String, query: DeviceQuery) throws(ServiceError) -> DevicePage {
        try require(principal, Self.readRole, to: "read devices")
        _ = try owned(principal, clientID)
        return try admin(principal).devices(clientID: clientID, query: query)
    }

    /// Refuses a device that is unknown or another workspace's alike (`device_not_found`).
    private func ownedDevice(_ principal: AdminPrincipal, _ keyID: [UInt8]) throws(ServiceError) {
        guard let device = try stored({ () throws(StorageError) in try store.device(keyID: keyID) }) else {
            throw ServiceError.deviceNotFound
        }
        do {
            _ = try owned(principal, device.clientID)
        } catch  where error.code == .integrationNotFound {
            throw ServiceError.deviceNotFound
        }
    }

    /// Blocks a device of one of the workspace's integrations; how many tokens went.
    package func blockDevice(_ principal: AdminPrincipal, keyID: [UInt8]) throws(ServiceError) -> Int {
        try require(principal, Self.changeRole, to: "block devices")
        try ownedDevice(principal, keyID)
        guard let tokens = try admin(principal).blockDevice(keyID: keyID) else { throw ServiceError.deviceNotFound }
        return tokens
    }

    /// Unblocks a device of one of the workspace's integrations, where the operator allows it:
    /// `unblock_disabled` otherwise, `integration_revoked` for a revoked integration's device.
    /// True when it was blocked, false when it was active already.
    package func unblockDevice(_ principal: AdminPrincipal, keyID: [UInt8]) throws(ServiceError) -> Bool {
        try require(principal, Self.changeRole, to: "unblock devices")
        guard devicesUnblockable else { throw ServiceError.unblockDisabled }
        try ownedDevice(principal, keyID)
        switch try admin(principal).unblockDevice(keyID: keyID) {
        case .unblocked: return true
        case .notBlocked: return false
        case .integrationRevoked: throw ServiceError.integrationRevoked
        case .notFound: throw ServiceError.deviceNotFound
        }
    }

    /// Revokes one live access token of the workspace's; `token_not_found` for an unknown,
    /// expired or another workspace's token alike.
    package func revokeToken(_ principal: AdminPrincipal, token: String) throws(ServiceError) {
        try revokeToken(principal, hash: Digest.sha256(Array(token.utf8)))
    }

    /// Revokes one live access token of the workspace's by its SHA-256 (as a device's token list
    /// names it); `token_not_found` for an unknown, expired or another workspace's alike.
    package func revokeToken(_ principal: AdminPrincipal, hash: [UInt8]) throws(ServiceError) {
        try require(principal, Self.changeRole, to: "revoke tokens")
        let now = clock.now()
        guard let record = try stored({ () throws(StorageError) in try store.token(hash: hash) }),
            record.workspaceID == principal.workspaceID, record.expiresAt > now
        else { throw ServiceError.tokenNotFound }
        guard try admin(principal).revokeToken(hash: hash) else { throw ServiceError.tokenNotFound }
    }

    /// A device's live tokens, newest first (at most 100; an uncapped device may hold more): their
    /// SHA-256 (what a revocation names), times and kind, never the tokens themselves.
    package func deviceTokens(_ principal: AdminPrincipal, keyID: [UInt8]) throws(ServiceError) -> [TokenRecord] {
        try require(principal, Self.readRole, to: "read devices")
        try ownedDevice(principal, keyID)
        let now = clock.now()
        return try stored { () throws(StorageError) in try store.liveTokens(keyID: keyID, at: now, limit: 100) }
    }

    /// One page of the workspace's audit log, newest first (`query.workspaceID` is replaced by
    /// the principal's: no key reads another workspace's rows).
    package func auditPage(_ principal: AdminPrincipal, _ query: AuditQuery) throws(ServiceError) -> AuditPage {
        try require(principal, Self.readRole, to: "read the audit log")
        var query = query
        query.workspaceID = principal.workspaceID
        return try stored { () throws(StorageError) in try store.auditPage(query) }
    }
}
