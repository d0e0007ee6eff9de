/// A debug token of an integration (migration 0012): what lets a build that cannot attest (the
/// iOS Simulator, previews, CI) get access tokens. Its secret (`dbg_` + 256 random bits) is shown
/// once and never stored; `secretHash` is its SHA-256.
package struct DebugTokenRecord: Sendable, Equatable {
    /// `dbgt_` + 16 hex digits: what lists show and `revoke` takes.
    package var id: String
    package var secretHash: [UInt8]
    /// The key ID its access tokens carry: 32 random bytes that name no device, so that revoking
    /// it deletes them by the tokens' key index, as blocking a device does.
    package var keyID: [UInt8]
    package var clientID: String
    package var name: String
    /// The actor that created it (an admin key's name, or `alice (attestctl)`).
    package var createdBy: String
    /// Unix seconds.
    package var createdAt: Int64
    /// Unix seconds; required, at most 90 days after `createdAt`.
    package var expiresAt: Int64
    package var lastUsedAt: Int64?
    /// Access tokens it minted.
    package var minted: Int
    package var revokedAt: Int64?

    /// A debug token record.
    package init(
        id: String, secretHash: [UInt8], keyID: [UInt8], clientID: String, name: String, createdBy: String, createdAt: Int64,
        expiresAt: Int64, lastUsedAt: Int64? = nil, minted: Int = 0, revokedAt: Int64? = nil
    ) {
        (self.id, self.secretHash, self.keyID, self.clientID, self.name, self.createdBy) = (
            id, secretHash, keyID, clientID, name, createdBy
        )
        (self.createdAt, self.expiresAt, self.lastUsedAt, self.minted, self.revokedAt) = (
            createdAt, expiresAt, lastUsedAt, minted, revokedAt
        )
    }

    /// Neither revoked nor expired at `time`.
    package func isLive(at time: Int64) -> Bool { revokedAt == nil && expiresAt > time }
}

extension DebugTokenRecord: StoredRecord {
    package static let columns = [
        "id", "secret_hash", "key_id", "client_id", "name", "created_by", "created_at", "expires_at", "last_used_at", "minted",
        "revoked_at",
    ]

    package var storedValues: [SQLValue] {
        [
            .text(id), .blob(secretHash), .blob(keyID), .text(clientID), .text(name), .text(createdBy), .integer(createdAt),
            .integer(expiresAt), SQLValue(lastUsedAt), .integer(Int64(minted)), SQLValue(revokedAt),
        ]
    }

    package init(row: inout SQLRowReader) throws(StorageError) {
        self.init(
            id: try row.text(), secretHash: try row.blob(), keyID: try row.blob(), clientID: try row.text(), name: try row.text(),
            createdBy: try row.text(), createdAt: try row.int64(), expiresAt: try row.int64(), lastUsedAt: try row.optionalInt64(),
            minted: Int(try row.int64()), revokedAt: try row.optionalInt64())
    }
}

/// The outcome of storing a new debug token.
package enum DebugTokenInsert: Sendable, Equatable {
    case inserted
    /// The integration holds its maximum of live debug tokens; nothing was written.
    case limitReached
    /// The integration is unknown, revoked or suspended; nothing was written.
    case integrationInactive
}

/// The outcome of revoking a debug token.
package enum DebugTokenRevocation: Sendable, Equatable {
    /// Revoked now, with the number of its live access tokens deleted.
    case revoked(tokens: Int)
    /// It was revoked before; nothing changed.
    case alreadyRevoked
}

/// The outcome of minting an access token for a debug token.
package enum DebugTokenMint: Sendable, Equatable {
    case minted
    /// Unknown, expired, revoked, or of another integration: one outcome for all four.
    case invalid
    case integrationSuspended
    case integrationRevoked
}

/// The debug tokens of integrations: made and killed by admins, exchanged by builds that cannot
/// attest. Every change is one transaction with its audit row; a revocation deletes the access
/// tokens the debug token minted and returns only once no node answers them from memory.
package protocol DebugTokenStore: Sendable {
    /// Stores `token` unless its integration is not active or already holds `liveLimit` live
    /// debug tokens at `token.createdAt` (counted under the integration's row lock).
    func insertDebugToken(_ token: DebugTokenRecord, liveLimit: Int, audit: AuditNote<Void>?) throws(StorageError) -> DebugTokenInsert
    /// The integration's debug tokens, revoked and expired ones too, oldest first.
    func debugTokens(clientID: String) throws(StorageError) -> [DebugTokenRecord]
    /// The debug token with this ID.
    func debugToken(id: String) throws(StorageError) -> DebugTokenRecord?
    /// The debug token whose secret has this SHA-256.
    func debugToken(secretHash: [UInt8]) throws(StorageError) -> DebugTokenRecord?
    /// Revokes a debug token and deletes its access tokens; nil when unknown.
    func revokeDebugToken(id: String, at time: Int64, audit: AuditNote<DebugTokenRevocation>?) throws(StorageError)
        -> DebugTokenRevocation?
    /// Inserts `token` (its `debugTokenID` and `keyID` the debug token's) while the debug token is
    /// live at `time` for `token.clientID` and the integration is active, and counts the use.
    func mintForDebugToken(_ token: TokenRecord, at time: Int64) throws(StorageError) -> DebugTokenMint
}
