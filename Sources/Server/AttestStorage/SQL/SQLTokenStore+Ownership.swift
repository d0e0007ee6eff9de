/// A workspace's primary ownership passed on in two steps (`ownership_offers`), written once for
/// both dialects.
extension SQLTokenStore {
    package func offerOwnership(_ offer: OwnershipOffer, audit: AuditNote<Void>?) throws(StorageError) {
        try perform(.transaction) { session throws(StorageError) in
            try session.run(OwnershipSQL.offer, offer.storedValues)
            try Self.audit(audit, (), in: session)
        }
    }

    package func ownershipOffer(workspaceID: String) throws(StorageError) -> OwnershipOffer? {
        try perform(.read) { session throws(StorageError) in
            try session.record(OwnershipOffer.self, OwnershipSQL.byWorkspace, [.text(workspaceID)])
        }
    }

    package func withdrawOwnershipOffer(workspaceID: String, audit: AuditNote<Bool>?) throws(StorageError) -> Bool {
        try perform(.transaction) { session throws(StorageError) -> Bool in
            let withdrawn = try session.run(OwnershipSQL.withdraw, [.text(workspaceID)]) == 1
            try Self.audit(audit, withdrawn, in: session)
            return withdrawn
        }
    }

    package func acceptOwnership(workspaceID: String, keyID: String, at time: Int64, audit: AuditNote<Void>?) throws(StorageError) -> Bool {
        try perform(.transaction) { session throws(StorageError) -> Bool in
            // The workspace's keys' lock first (as a key's creation takes it), so that no primary
            // owner is created meanwhile; then the offer, still open, to this key.
            try session.run(AdminKeySQL.lockWorkspaceKeys, [.text(workspaceID)])
            guard let offer = try session.record(OwnershipOffer.self, OwnershipSQL.lockOffer, [.text(workspaceID)]),
                offer.toKeyID == keyID, offer.expiresAt > time,
                try session.count(
                    OwnershipSQL.usableKey, [.text(offer.fromKeyID), .text(workspaceID), .text("primary_owner"), .integer(time)]) == 1,
                try session.count(OwnershipSQL.usableKey, [.text(keyID), .text(workspaceID), .text(""), .integer(time)]) == 1
            else { return false }
            try session.run(OwnershipSQL.setRole, [.text(AdminRole.owner.rawValue), .text(offer.fromKeyID)])
            try session.run(OwnershipSQL.setRole, [.text(AdminRole.primaryOwner.rawValue), .text(keyID)])
            try session.run(OwnershipSQL.withdraw, [.text(workspaceID)])
            try Self.audit(audit, (), in: session)
            return true
        }
    }
}

/// The statements of `ownership_offers`.
enum OwnershipSQL {
    static let offer = SQLStatement(
        """
        \(SQLText.insert(into: "ownership_offers", OwnershipOffer.columns))
        ON CONFLICT (workspace_id) DO UPDATE SET from_key_id = excluded.from_key_id, to_key_id = excluded.to_key_id,
            created_at = excluded.created_at, expires_at = excluded.expires_at
        """)
    static let byWorkspace = SQLStatement("SELECT \(SQLText.list(OwnershipOffer.columns)) FROM ownership_offers WHERE workspace_id = ?")
    static let lockOffer = SQLStatement(
        "SELECT \(SQLText.list(OwnershipOffer.columns)) FROM ownership_offers WHERE workspace_id = ?", forPostgreSQL: " FOR UPDATE")
    static let withdraw = SQLStatement("DELETE FROM ownership_offers WHERE workspace_id = ?")
    /// Key `?1` of workspace `?2`, of role `?3` (any role when ''), usable at `?4`.
    static let usableKey = SQLStatement(
        """
        SELECT count(*) FROM admin_keys WHERE id = ?1 AND workspace_id = ?2 AND (?3 = '' OR role = ?3)
            AND revoked_at IS NULL AND disabled_at IS NULL AND (expires_at IS NULL OR expires_at > ?4)
        """)
    static let setRole = SQLStatement("UPDATE admin_keys SET role = ? WHERE id = ?")
}
