import AttestCrypto
package import AttestStorage

/// A newly created debug token: its record, and the secret, shown once and never stored.
package struct IssuedDebugToken: Sendable {
    package let record: DebugTokenRecord
    /// `dbg_` and 256 random bits (base64url, 43 characters).
    package let secret: String
}

/// Debug tokens: made, listed and revoked by attestctl (any integration) and by the admin API
/// (the principal's workspace only: `developer` to create and revoke, `user` to list). Each change
/// is audited in its own transaction; a revocation kills every access token the debug token minted
/// on every node before it returns.
extension WorkspaceAdmin {
    /// The prefix of a debug token's public ID.
    package static let debugTokenIDPrefix = "dbgt_"
    /// What creating and revoking debug tokens needs.
    package static let debugTokenRole = AdminRole.developer
    /// The longest a debug token may live: 90 days.
    package static let debugTokenMaximumLifetime: Int64 = 90 * 86_400
    /// A debug token's lifetime when none is asked for: 30 days.
    package static let debugTokenDefaultLifetime: Int64 = 30 * 86_400
    /// Live (unexpired, unrevoked) debug tokens one integration may hold.
    package static let debugTokenLiveLimit = 20

    /// Creates a debug token for `clientID`, audited as `actor`'s action in the integration's
    /// workspace (so that its admins see it, whether the console or attestctl made it).
    package func createDebugToken(clientID: String, name: String, lifetime: Int64?, actor: String) throws(ServiceError) -> IssuedDebugToken
    {
        try Self.requireValidName(name)
        guard let integration = try stored({ () throws(StorageError) in try store.integration(clientID: clientID) }) else {
            throw ServiceError.integrationNotFound
        }
        let workspaceID = integration.workspaceID
        let lifetime = lifetime ?? Self.debugTokenDefaultLifetime
        guard lifetime >= 60, lifetime <= Self.debugTokenMaximumLifetime else {
            throw ServiceError.malformed(.field(.expiresIn), "a debug token lives from 60 seconds to 90 days")
        }
        let secret = TokenService.debugTokenPrefix + Base64Text.encode(try random.bytesOrFail(32), .url)
        let now = clock.now()
        let record = DebugTokenRecord(
            id: Self.debugTokenIDPrefix + Hex.encode(try random.bytesOrFail(8)), secretHash: Digest.sha256(Array(secret.utf8)),
            keyID: try random.bytesOrFail(32), clientID: clientID, name: name, createdBy: actor, createdAt: now,
            expiresAt: now + lifetime)
        let audit = AuditNote<Void>(
            at: now, actor: actor, action: .debugTokenCreate, target: record.id, workspaceID: workspaceID
        ) { _ in "for \(clientID), name \(name), expires \(record.expiresAt)" }
        switch try stored({ () throws(StorageError) in try store.insertDebugToken(record, liveLimit: Self.debugTokenLiveLimit, audit: audit)
        })
        {
        case .inserted: break
        case .limitReached:
            throw ServiceError(
                .debugTokenLimit, .debugTokenLimit,
                "the integration has \(Self.debugTokenLiveLimit) live debug tokens; revoke one first")
        case .integrationInactive:
            let now = try stored { () throws(StorageError) in try store.integration(clientID: clientID) }
            throw now?.status == .revoked ? ServiceError.integrationRevoked : ServiceError.integrationSuspended
        }
        logger?.log(.info, "debug token created", ["debug_token.id": .string(record.id), "client_id": .string(clientID)])
        return IssuedDebugToken(record: record, secret: secret)
    }

    /// The integration's debug tokens, oldest first (attestctl).
    package func debugTokens(clientID: String) throws(ServiceError) -> [DebugTokenRecord] {
        try stored { () throws(StorageError) in try store.debugTokens(clientID: clientID) }
    }

    /// Revokes a debug token as `actor`, audited in its integration's workspace: nil when unknown.
    package func revokeDebugToken(id: String, actor: String) throws(ServiceError) -> DebugTokenRevocation? {
        guard let token = try stored({ () throws(StorageError) in try store.debugToken(id: id) }) else { return nil }
        let integration = try stored { () throws(StorageError) in try store.integration(clientID: token.clientID) }
        let audit = AuditNote<DebugTokenRevocation>(
            at: clock.now(), actor: actor, action: .debugTokenRevoke, target: id, workspaceID: integration?.workspaceID
        ) { outcome in
            guard case .revoked(let tokens) = outcome else { return nil }
            return "revoked; \(tokens) access tokens it minted revoked"
        }
        let outcome = try stored { () throws(StorageError) in try store.revokeDebugToken(id: id, at: audit.at, audit: audit) }
        if case .revoked(let tokens)? = outcome {
            logger?.log(.warning, "debug token revoked", ["debug_token.id": .string(id), "tokens": .int(tokens)])
        }
        return outcome
    }

    // MARK: The admin API

    /// Creates a debug token for an integration of the principal's workspace.
    package func createDebugToken(
        _ principal: AdminPrincipal, clientID: String, name: String, lifetime: Int64?
    ) throws(ServiceError) -> IssuedDebugToken {
        try require(principal, Self.debugTokenRole, to: "create debug tokens")
        let integration = try owned(principal, clientID)
        return try createDebugToken(clientID: integration.clientID, name: name, lifetime: lifetime, actor: principal.actor)
    }

    /// The debug tokens of an integration of the principal's workspace.
    package func debugTokens(_ principal: AdminPrincipal, clientID: String) throws(ServiceError) -> [DebugTokenRecord] {
        try require(principal, Self.readRole, to: "read debug tokens")
        return try debugTokens(clientID: try owned(principal, clientID).clientID)
    }

    /// Revokes a debug token of an integration of the principal's workspace.
    package func revokeDebugToken(_ principal: AdminPrincipal, clientID: String, id: String) throws(ServiceError) {
        try require(principal, Self.debugTokenRole, to: "revoke debug tokens")
        let integration = try owned(principal, clientID)
        guard let token = try stored({ () throws(StorageError) in try store.debugToken(id: id) }), token.clientID == integration.clientID
        else { throw Self.debugTokenNotFound }
        guard try revokeDebugToken(id: token.id, actor: principal.actor) != nil else {
            throw Self.debugTokenNotFound
        }
    }

    static let debugTokenNotFound = ServiceError(
        .debugTokenNotFound, .debugTokenNotFound, "no debug token has this ID for this integration")

    /// A name an admin gives a key or a debug token: `AdminName`'s rule, up to 100 characters.
    static func requireValidName(_ name: String) throws(ServiceError) {
        if let problem = AdminName.problem(name, maximumCharacters: 100) { throw ServiceError.malformed(.field(.name), "name \(problem)") }
    }
}

extension DebugTokenRecord {
    /// What lists and the admin API show of a debug token (never its secret nor its hash), as
    /// attestctl's `--json` and the admin API write it.
    package var publicMembers: [(String, any Sendable)] {
        [
            ("id", id), ("name", name), ("client_id", clientID), ("created_by", createdBy), ("created_at", createdAt),
            ("expires_at", expiresAt), ("last_used_at", lastUsedAt), ("minted", minted), ("revoked", revokedAt != nil),
            ("revoked_at", revokedAt),
        ]
    }
}
