package import AttestCore
import AttestCrypto
package import AttestObservability
package import AttestStorage

/// The administrator's use cases: create, list, show, suspend, resume and (permanently) revoke
/// integrations; revoke one token; block one device; read the audit log. Every change is logged
/// and recorded in the audit log with the person behind it.
package struct IntegrationAdmin: Sendable {
    /// At most this many bundle IDs per integration.
    package static let maximumBundleIDs = 32

    let store: any AdminStore & DebugTokenStore
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger?
    /// Who acts, as the audit log records it (e.g. `alice (attestctl)`, or an admin key's name).
    let actor: String
    /// The workspace an admin key acts in, recorded with each audit row; nil for attestctl.
    let workspaceID: String?

    package init(
        store: any AdminStore & DebugTokenStore, clock: any WallClock = SystemWallClock(), random: any RandomSource = SystemRandom(),
        logger: Logger? = nil,
        actor: String = "unknown", workspaceID: String? = nil
    ) {
        (self.store, self.clock, self.random, self.logger, self.actor) = (store, clock, random, logger, actor)
        self.workspaceID = workspaceID
    }

    /// The audit row of `action` on `target`, its detail from the change's outcome (nil: no row),
    /// written by the store in the change's own transaction.
    private func note<Outcome>(
        _ action: AuditAction, _ target: String, at time: Int64, _ detail: @escaping @Sendable (Outcome) -> String?
    ) -> AuditNote<Outcome> {
        AuditNote(at: time, actor: actor, action: action, target: target, workspaceID: workspaceID, detail: detail)
    }

    /// Validates and stores a new integration with a fresh client ID. Nothing is normalised:
    /// a lowercase team ID or a bundle ID with a trailing space is refused, not fixed.
    package func create(
        workspaceID: String, name: String, teamID: String, bundleIDs: [String], environments: Set<AppAttestEnvironment>,
        maxLiveTokensPerDevice: Int? = nil, policy: IntegrationPolicy = IntegrationPolicy()
    ) throws(ServiceError) -> IntegrationRecord {
        guard Self.isValidIdentifier(workspaceID) else {
            throw ServiceError.invalidIntegration(.workspaceID, "workspace ID must be 1 to 64 of A-Z a-z 0-9 _ -")
        }
        if let problem = AdminName.problem(name, maximumCharacters: 200) {
            throw ServiceError.invalidIntegration(.name, "name \(problem)")
        }
        guard (1...Self.maximumBundleIDs).contains(bundleIDs.count) else {
            throw ServiceError.invalidIntegration(.bundleIDCount, "an integration has 1 to \(Self.maximumBundleIDs) bundle IDs")
        }
        guard Set(bundleIDs).count == bundleIDs.count else {
            throw ServiceError.invalidIntegration(.bundleIDDuplicate, "a bundle ID is listed twice")
        }
        for bundleID in bundleIDs {
            do {
                _ = try AppID(teamID: teamID, bundleID: bundleID)
            } catch {
                throw ServiceError.invalidIntegration(Self.appIDField(teamID: teamID), error.reason)
            }
        }
        guard !environments.isEmpty else {
            throw ServiceError.invalidIntegration(.environment, "at least one environment is required")
        }
        guard let clientID = ClientID(ClientID.prefix + Hex.encode(try random.bytesOrFail(ClientID.hexDigits / 2))) else {
            throw ServiceError(.internalError, .random, "the random source gave a client ID of the wrong length")
        }
        let record = IntegrationRecord(
            clientID: clientID.text, workspaceID: workspaceID, name: name, teamID: teamID, bundleIDs: bundleIDs.sorted(),
            environments: Array(environments), status: .active, createdAt: clock.now(), revokedAt: nil,
            maxLiveTokensPerDevice: maxLiveTokensPerDevice, policy: policy)
        let detail =
            "workspace \(workspaceID), team \(teamID), \(bundleIDs.count) bundle IDs, environments \(record.environments.map(\.rawValue).joined(separator: "+"))"
            + (maxLiveTokensPerDevice.map { ", at most \($0) live tokens per device" } ?? "") + ", " + Self.describe(policy)
        let audit: AuditNote<Void> = note(.integrationCreate, record.clientID, at: record.createdAt) { _ in detail }
        try stored { () throws(StorageError) in try store.insertIntegration(record, audit: audit) }
        logger?.log(
            .info, "integration created",
            [
                "client.id": .string(record.clientID), "workspace.id": .string(workspaceID), "team.id": .string(teamID),
                "bundle_ids": .int(bundleIDs.count), "environments": .string(record.environments.map(\.rawValue).joined(separator: ",")),
            ])
        if environments.contains(.development) {
            logger?.log(
                .warning, "integration accepts development keys (from developer-signed builds, not only the App Store app)",
                ["client.id": .string(record.clientID)])
        }
        return record
    }

    /// Replaces an integration's receipt and risk policy and live-token limit; nil when unknown.
    package func update(clientID: String, policy: IntegrationPolicy, maxLiveTokensPerDevice: Int?) throws(ServiceError)
        -> IntegrationRecord?
    {
        let detail = Self.describe(policy) + (maxLiveTokensPerDevice.map { ", at most \($0) live tokens per device" } ?? "")
        let audit: AuditNote<Void> = note(.integrationUpdate, clientID, at: clock.now()) { _ in detail }
        let found = try stored { () throws(StorageError) in
            try store.updatePolicy(clientID: clientID, policy: policy, maxLiveTokensPerDevice: maxLiveTokensPerDevice, audit: audit)
        }
        guard found == true else { return nil }
        logger?.log(.warning, "integration policy changed", ["client.id": .string(clientID), "policy": .string(detail)])
        return try show(clientID: clientID)
    }

    /// The devices of an integration with their live token counts.
    package func devices(clientID: String, query: DeviceQuery) throws(ServiceError) -> DevicePage {
        try stored { () throws(StorageError) in try store.devicePage(clientID: clientID, query: query, at: clock.now()) }
    }

    /// One device with its live token count.
    package func device(keyID: [UInt8]) throws(ServiceError) -> DeviceSummary? {
        let now = clock.now()
        return try stored { () throws(StorageError) -> DeviceSummary? in
            guard let device = try store.device(keyID: keyID) else { return nil }
            return DeviceSummary(device: device, liveTokens: try store.liveTokenCount(keyID: keyID, at: now))
        }
    }

    /// The policy in words, for logs, the audit log and attestctl.
    package static func describe(_ policy: IntegrationPolicy) -> String {
        "valid receipt \(policy.requireValidReceipt ? "required" : "not required"), max risk metric "
            + (policy.maxRiskMetric.map(String.init) ?? "none") + ", max new keys per hour "
            + (policy.maxNewKeysPerHour.map(String.init) ?? "none")
    }

    /// Revokes permanently; nil when the client ID is unknown. Idempotent.
    package func revoke(clientID: String) throws(ServiceError) -> RevocationSummary? {
        let audit: AuditNote<RevocationSummary> = note(.integrationRevoke, clientID, at: clock.now()) { summary in
            summary.changed ? "\(summary.tokensRevoked) tokens revoked, \(summary.devicesBlocked) devices blocked" : "already revoked"
        }
        let summary = try stored { () throws(StorageError) in try store.revokeIntegration(clientID: clientID, at: audit.at, audit: audit) }
        if let summary {
            logger?.log(
                .warning, summary.changed ? "integration revoked" : "integration already revoked",
                [
                    "client.id": .string(clientID), "tokens_revoked": .int(summary.tokensRevoked),
                    "devices_blocked": .int(summary.devicesBlocked),
                ])
        }
        return summary
    }

    /// Suspends (`true`) or resumes (`false`) an integration: nil when unknown, false when it is
    /// revoked. Its tokens and devices are refused while it is suspended and work again after.
    package func setSuspended(clientID: String, _ suspended: Bool) throws(ServiceError) -> Bool? {
        let time = clock.now()
        let audit: AuditNote<Bool> = note(suspended ? .integrationSuspend : .integrationResume, clientID, at: time) { _ in "" }
        let result = try stored { () throws(StorageError) in
            try store.setSuspended(clientID: clientID, at: suspended ? time : nil, audit: audit)
        }
        if result == true {
            logger?.log(.warning, suspended ? "integration suspended" : "integration resumed", ["client.id": .string(clientID)])
        }
        return result
    }

    /// Revokes one access token by its SHA-256; true when it existed.
    package func revokeToken(hash: [UInt8]) throws(ServiceError) -> Bool {
        let audit: AuditNote<Bool> = note(.tokenRevoke, Hex.encode(hash), at: clock.now()) { found in
            found ? "revoked" : "not found (expired or never issued)"
        }
        let found = try stored { () throws(StorageError) in try store.revokeToken(hash: hash, audit: audit) }
        logger?.log(.warning, found ? "token revoked" : "token to revoke not found", ["token.sha256": .string(Hex.encode(hash))])
        return found
    }

    /// Blocks one device key: its tokens die at once; nil when unknown, else how many tokens went.
    package func blockDevice(keyID: [UInt8]) throws(ServiceError) -> Int? {
        let audit: AuditNote<Int> = note(.deviceBlock, Hex.encode(keyID), at: clock.now()) { tokens in "\(tokens) tokens revoked" }
        let tokens = try stored { () throws(StorageError) in try store.blockDevice(keyID: keyID, at: audit.at, audit: audit) }
        if let tokens {
            logger?.log(.warning, "device blocked", ["key.id": .string(Hex.encode(keyID)), "tokens_revoked": .int(tokens)])
        }
        return tokens
    }

    /// Makes a blocked key active again, unless its integration is revoked (the operator's lever,
    /// attestctl; the admin API only where the operator allows it).
    package func unblockDevice(keyID: [UInt8]) throws(ServiceError) -> DeviceUnblock {
        let audit: AuditNote<Void> = note(.deviceUnblock, Hex.encode(keyID), at: clock.now()) { _ in "" }
        let outcome = try stored { () throws(StorageError) in try store.unblockDevice(keyID: keyID, at: audit.at, audit: audit) }
        if outcome == .unblocked { logger?.log(.warning, "device unblocked", ["key.id": .string(Hex.encode(keyID))]) }
        return outcome
    }

    /// Stores the integration's DeviceCheck key `pem` (a PKCS#8 P-256 key, checked here) sealed
    /// with `secretsKey` (AES-256-GCM, bound to the client ID and key ID); nil when the integration
    /// is unknown. The key is never logged nor audited: the audit row names its key ID.
    package func setFraudKey(clientID: String, keyID: String, pem: [UInt8], secretsKey: [UInt8]) throws(ServiceError) -> Bool? {
        guard Self.isFraudKeyID(keyID) else {
            throw ServiceError.malformed(.field(.keyID), "the 10-character key ID (A-Z 0-9) Apple shows for the key")
        }
        // Validate before anything is stored: the refresher signs with this key, so it must be a P-256 key.
        guard let key = try? PrivateKey(pem: String(decoding: pem, as: UTF8.self)), key.curve == .p256 else {
            throw ServiceError.malformed(.field(.fraudKey), "must be a DeviceCheck private key: a PKCS#8 PEM EC P-256 key (AuthKey_KID.p8)")
        }
        let sealed: [UInt8]
        do {
            sealed = try SealedBox.seal(
                pem, key: secretsKey, associatedData: FraudKeySealing.associatedData(clientID: clientID, keyID: keyID))
        } catch {
            throw ServiceError(.internalError, .random, "sealing the DeviceCheck key failed: \(error.code.rawValue)")
        }
        let audit: AuditNote<Void> = note(.integrationSetFraudKey, clientID, at: clock.now()) { _ in "key id \(keyID)" }
        let found = try stored { () throws(StorageError) in
            try store.setFraudKey(clientID: clientID, keyID: keyID, sealedKey: sealed, at: audit.at, audit: audit)
        }
        if found != nil { logger?.log(.info, "DeviceCheck key set", ["client.id": .string(clientID), "fraud_key.id": .string(keyID)]) }
        return found
    }

    /// The integration's debug tokens live (unexpired, unrevoked) now.
    package func liveDebugTokens(clientID: String) throws(ServiceError) -> Int {
        let now = clock.now()
        return try stored { () throws(StorageError) in try store.debugTokens(clientID: clientID).filter { $0.isLive(at: now) }.count }
    }

    /// The ID of the integration's DeviceCheck key, nil when none is set (never the key).
    package func fraudKeyID(clientID: String) throws(ServiceError) -> String? {
        try stored { () throws(StorageError) in try store.fraudKey(clientID: clientID)?.keyID }
    }

    /// A consistent copy of the database, taken online, in a new SQLite file at `path`.
    package func backup(to path: String) throws(ServiceError) {
        try stored { () throws(StorageError) in try store.backup(to: path) }
    }

    /// Whether `keyID` has the shape of a DeviceCheck key ID: 10 of A-Z 0-9.
    package static func isFraudKeyID(_ keyID: String) -> Bool {
        keyID.utf8.count == 10 && keyID.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }
    }

    /// One page of the audit log, newest first (every workspace's rows and attestctl's unless the
    /// query names a workspace).
    package func auditPage(_ query: AuditQuery) throws(ServiceError) -> AuditPage {
        try stored { () throws(StorageError) in try store.auditPage(query) }
    }

    /// All integrations.
    package func list() throws(ServiceError) -> [IntegrationRecord] {
        try stored { () throws(StorageError) in try store.integrations() }
    }

    /// One integration.
    package func show(clientID: String) throws(ServiceError) -> IntegrationRecord? {
        try stored { () throws(StorageError) in try store.integration(clientID: clientID) }
    }

    static func isValidIdentifier(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return (1...64).contains(bytes.count)
            && bytes.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
            }
    }
}

extension IntegrationAdmin {
    /// Which part of an App ID a validation failure is about.
    static func appIDField(teamID: String) -> ServiceError.IntegrationField {
        (try? AppID(teamID: teamID, bundleID: "a")) == nil ? .teamID : .bundleID
    }
}
