/// The roles of a workspace's admin keys, lowest to highest (the seed service's: user,
/// developer, admin, owner, primary owner). Reading needs any role; changing integrations,
/// devices and tokens `admin` or above; managing keys `owner` or above, never above one's own.
package enum AdminRole: String, Sendable, CaseIterable, Comparable {
    case user
    case developer
    case admin
    case owner
    case primaryOwner = "primary_owner"

    /// The position from lowest (0) to highest.
    package var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }

    /// Lower rank first.
    package static func < (lhs: AdminRole, rhs: AdminRole) -> Bool { lhs.rank < rhs.rank }
}

/// One admin key: a public ID (`admk_` + 16 hex digits, what `list` shows and `revoke` takes),
/// the SHA-256 of its secret (the secret itself is shown once and never stored), the workspace
/// it acts in, its role and its name (the audit log's actor), and its lifecycle: an optional
/// expiry, disabled (refused until enabled again) or revoked (for good), and its last use.
package struct AdminKeyRecord: Sendable, Equatable {
    package var id: String
    package var keyHash: [UInt8]
    package var workspaceID: String
    package var role: AdminRole
    package var name: String
    /// Unix seconds.
    package var createdAt: Int64
    /// Unix seconds; a revoked key is refused from the next request on, for good.
    package var revokedAt: Int64?
    /// Unix seconds; the key is refused from then on. Nil: no expiry.
    package var expiresAt: Int64?
    /// Unix seconds; set while the key is disabled (refused until it is enabled again).
    package var disabledAt: Int64?
    /// Unix seconds of its last request or sign-in (written at most once a minute); nil: never used.
    package var lastUsedAt: Int64?

    /// A key record.
    package init(
        id: String, keyHash: [UInt8], workspaceID: String, role: AdminRole, name: String, createdAt: Int64, revokedAt: Int64? = nil,
        expiresAt: Int64? = nil, disabledAt: Int64? = nil, lastUsedAt: Int64? = nil
    ) {
        self.id = id
        self.keyHash = keyHash
        self.workspaceID = workspaceID
        self.role = role
        self.name = name
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.expiresAt = expiresAt
        self.disabledAt = disabledAt
        self.lastUsedAt = lastUsedAt
    }

    /// What a request with the key gets at `time`: `active` only if it is neither revoked,
    /// disabled nor expired (checked in that order).
    package func status(at time: Int64) -> AdminKeyStatus {
        if revokedAt != nil { return .revoked }
        if disabledAt != nil { return .disabled }
        if let expiresAt, expiresAt <= time { return .expired }
        return .active
    }
}

/// Where an admin key stands; only an `active` key is accepted.
package enum AdminKeyStatus: String, Sendable, CaseIterable {
    case active
    case disabled
    case expired
    case revoked
}

extension AdminKeyRecord: StoredRecord {
    package static let columns = [
        "id", "key_hash", "workspace_id", "role", "name", "created_at", "revoked_at", "expires_at", "disabled_at", "last_used_at",
    ]

    package var storedValues: [SQLValue] {
        [
            .text(id), .blob(keyHash), .text(workspaceID), .text(role.rawValue), .text(name), .integer(createdAt), SQLValue(revokedAt),
            SQLValue(expiresAt), SQLValue(disabledAt), SQLValue(lastUsedAt),
        ]
    }

    package init(row: inout SQLRowReader) throws(StorageError) {
        self.init(
            id: try row.text(), keyHash: try row.blob(), workspaceID: try row.text(), role: try row.enumeration(AdminRole.self),
            name: try row.text(), createdAt: try row.int64(), revokedAt: try row.optionalInt64(), expiresAt: try row.optionalInt64(),
            disabledAt: try row.optionalInt64(), lastUsedAt: try row.optionalInt64())
    }
}

/// A console session: the SHA-256 of the cookie's value, the key that signed in, its times.
package struct AdminSessionRecord: Sendable, Equatable {
    package var sessionHash: [UInt8]
    package var keyID: String
    package var createdAt: Int64
    package var expiresAt: Int64

    /// A session record.
    package init(sessionHash: [UInt8], keyID: String, createdAt: Int64, expiresAt: Int64) {
        self.sessionHash = sessionHash
        self.keyID = keyID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

extension AdminSessionRecord: StoredRecord {
    package static let columns = ["session_hash", "key_id", "created_at", "expires_at"]

    package var storedValues: [SQLValue] { [.blob(sessionHash), .text(keyID), .integer(createdAt), .integer(expiresAt)] }

    package init(row: inout SQLRowReader) throws(StorageError) {
        self.init(sessionHash: try row.blob(), keyID: try row.text(), createdAt: try row.int64(), expiresAt: try row.int64())
    }
}

/// A live session and the key behind it, as one read finds them.
package struct LiveAdminSession: Sendable, Equatable, DecodableRecord {
    package var key: AdminKeyRecord
    package var session: AdminSessionRecord

    package static let columns = AdminKeyRecord.columns.map { "k." + $0 } + AdminSessionRecord.columns.map { "s." + $0 }

    package init(row: inout SQLRowReader) throws(StorageError) {
        key = try AdminKeyRecord(row: &row)
        session = try AdminSessionRecord(row: &row)
    }
}

/// How many devices and live tokens an integration has (the console's list).
package struct IntegrationCounts: Sendable, Equatable {
    package var devices: Int
    package var liveTokens: Int

    package init(devices: Int, liveTokens: Int) { (self.devices, self.liveTokens) = (devices, liveTokens) }
}

/// The workspace's open offer of its primary ownership: from the primary owner's key to another
/// key of the workspace, acceptable by that key's holder until `expiresAt`.
package struct OwnershipOffer: Sendable, Equatable {
    package var workspaceID: String
    package var fromKeyID: String
    package var toKeyID: String
    package var createdAt: Int64
    package var expiresAt: Int64

    package init(workspaceID: String, fromKeyID: String, toKeyID: String, createdAt: Int64, expiresAt: Int64) {
        (self.workspaceID, self.fromKeyID, self.toKeyID, self.createdAt, self.expiresAt) = (
            workspaceID, fromKeyID, toKeyID, createdAt, expiresAt
        )
    }
}

extension OwnershipOffer: StoredRecord {
    package static let columns = ["workspace_id", "from_key_id", "to_key_id", "created_at", "expires_at"]

    package var storedValues: [SQLValue] {
        [.text(workspaceID), .text(fromKeyID), .text(toKeyID), .integer(createdAt), .integer(expiresAt)]
    }

    package init(row: inout SQLRowReader) throws(StorageError) {
        self.init(
            workspaceID: try row.text(), fromKeyID: try row.text(), toKeyID: try row.text(), createdAt: try row.int64(),
            expiresAt: try row.int64())
    }
}
