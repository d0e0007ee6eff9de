import AttestCrypto
package import AttestStorage

/// The gateway's token checks and revocation, and the upkeep the server runs.
extension TokenService {
    // MARK: Tokens

    /// The token's facts if it is unexpired and its integration active; nil otherwise (no reason
    /// is given, so introspection is no oracle).
    package func introspect(_ token: String) throws(ServiceError) -> ActiveToken? {
        try requireAgreeingClock()
        guard let hash = Self.lookupHash(token) else { return nil }
        return try stored({ () throws(StorageError) in try store.activeToken(hash: hash, at: clock.now()) }).map(Self.active)
    }

    /// `introspect`, answered through `reply` exactly once: at once, or later from another thread
    /// when the store's lookup is a round trip (the HTTP worker serves other requests meanwhile).
    package func introspect(_ token: String, then reply: @escaping @Sendable (Result<ActiveToken?, ServiceError>) -> Void) {
        do throws(ServiceError) {
            try requireAgreeingClock()
        } catch {
            return reply(.failure(error))
        }
        guard let hash = Self.lookupHash(token) else { return reply(.success(nil)) }
        store.activeToken(hash: hash, at: clock.now()) { outcome in
            reply(outcome.map { $0.map(Self.active) }.mapError(ServiceError.storage))
        }
    }

    /// The SHA-256 to look up, or nil for input that cannot be a token (length and prefix are
    /// checked first: no hashing or lookup for it).
    private static func lookupHash(_ token: String) -> [UInt8]? {
        guard token.utf8.count == Self.tokenLength, token.hasPrefix(Self.tokenPrefix) else { return nil }
        return Digest.sha256(Array(token.utf8))
    }

    private static func active(_ record: TokenRecord) -> ActiveToken {
        ActiveToken(
            clientID: record.clientID, workspaceID: record.workspaceID, scope: record.scope, issuedAt: record.issuedAt,
            expiresAt: record.expiresAt, debug: record.isDebug)
    }

    /// RFC 7009 revocation of one access token: gone if it exists, nothing otherwise. What it
    /// did is returned for the log only: the caller's answer says nothing either way. Nil for
    /// input that cannot be a token (no lookup).
    @discardableResult
    package func revokeToken(_ token: String) throws(ServiceError) -> TokenRevocation? {
        guard let hash = Self.lookupHash(token) else { return nil }
        // Read first, for the log line's client ID (the deletion does not say whose it was); a
        // token that is expired or whose integration or device is refused has none here.
        let live = try stored { () throws(StorageError) in try store.activeToken(hash: hash, at: clock.now()) }
        // Audited like attestctl's `token revoke`, in the same transaction; only when a token went.
        let audit = AuditNote<Bool>(at: clock.now(), actor: "gateway (POST /v1/revoke)", action: .tokenRevoke, target: Hex.encode(hash)) {
            $0 ? "revoked" : nil
        }
        let deleted = try stored { () throws(StorageError) in try store.revokeToken(hash: hash, audit: audit) }
        return TokenRevocation(hashPrefix: String(Hex.encode(hash).prefix(16)), clientID: live?.clientID, deleted: deleted)
    }

    // MARK: Housekeeping

    /// Deletes expired tokens and challenges; says how many rows went, and how far the purge
    /// held back for a clock that stepped ahead (`PurgeHorizon`).
    package func purgeExpired() throws(ServiceError) -> PurgeReport {
        // Why: the purge deletes every node's expired rows by this node's clock.
        try requireAgreeingClock()
        let verdict = try purgeVerdict()
        let removed = try stored { () throws(StorageError) in try store.purgeExpired(at: verdict?.time ?? clock.now()) }
        return PurgeReport(removed: removed, verdict: verdict)
    }

    /// The horizon of this purge on a store whose clock is this node's (SQLite) and a clock that
    /// can tell a step from time passing; nil otherwise (PostgreSQL's clock check guards it).
    private func purgeVerdict() throws(ServiceError) -> PurgeHorizon.Verdict? {
        guard let monotonic = clock.monotonicSeconds(),
            let recorded = try stored({ () throws(StorageError) in try store.recordedTime() })
        else { return nil }
        let wall = clock.preciseNow()
        let verdict = purgeHorizon.withLock { $0.verdict(wall: wall, monotonic: monotonic, newestIssue: recorded.newestIssue) }
        clockCheck.recordLocal(verdict)
        return verdict
    }

    /// Counts and size for the metrics gauges.
    package func statistics() throws(ServiceError) -> StoreStatistics {
        try stored { () throws(StorageError) in try store.statistics() }
    }

    /// Closes the storage at a clean stop, after the last request (the HTTP edge's offload
    /// threads stopped first, `Router.stop`).
    package func closeStorage() throws(ServiceError) {
        try stored { () throws(StorageError) in try store.close() }
    }

    /// Throws `storage_unavailable` when the storage cannot serve requests now (`/readyz`).
    package func checkStorage() throws(ServiceError) {
        try stored { () throws(StorageError) in try store.checkAvailable() }
        try requireAgreeingClock()
    }
}
