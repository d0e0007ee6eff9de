/// Debug tokens, written once for both dialects (`DebugTokenStore`).
extension SQLTokenStore {
    package func insertDebugToken(
        _ token: DebugTokenRecord, liveLimit: Int, audit: AuditNote<Void>?
    ) throws(StorageError) -> DebugTokenInsert {
        try perform(.transaction) { session throws(StorageError) -> DebugTokenInsert in
            // The integration's row locked FOR UPDATE: two creations count and insert one at a time.
            guard try Self.integrationState(token.clientID, SharedSQL.lockIntegrationForUpdate, in: session) == .active else {
                return .integrationInactive
            }
            guard try session.count(DebugTokenSQL.liveCount, [.text(token.clientID), .integer(token.createdAt)]) < liveLimit else {
                return .limitReached
            }
            try session.run(DebugTokenSQL.insert, token.storedValues)
            try Self.audit(audit, (), in: session)
            return .inserted
        }
    }

    package func debugTokens(clientID: String) throws(StorageError) -> [DebugTokenRecord] {
        try perform(.read) { session throws(StorageError) in
            try session.records(DebugTokenRecord.self, DebugTokenSQL.ofIntegration, [.text(clientID)])
        }
    }

    package func debugToken(id: String) throws(StorageError) -> DebugTokenRecord? {
        try perform(.read) { session throws(StorageError) in try session.record(DebugTokenRecord.self, DebugTokenSQL.byID, [.text(id)]) }
    }

    package func debugToken(secretHash: [UInt8]) throws(StorageError) -> DebugTokenRecord? {
        try perform(.read) { session throws(StorageError) in
            try session.record(DebugTokenRecord.self, DebugTokenSQL.bySecretHash, [.blob(secretHash)])
        }
    }

    package func revokeDebugToken(
        id: String, at time: Int64, audit: AuditNote<DebugTokenRevocation>?
    ) throws(StorageError) -> DebugTokenRevocation? {
        try retiringAnswers { session throws(StorageError) -> DebugTokenRevocation? in
            guard let row = try session.row(DebugTokenSQL.lock, [.text(id)]) else { return nil }
            guard try row.isNull(0) else { return .alreadyRevoked }
            try session.run(DebugTokenSQL.revoke, [.integer(time), .text(id)])
            let outcome = DebugTokenRevocation.revoked(tokens: try session.run(SharedSQL.deleteTokensOfDevice, [.blob(try row.blob(1))]))
            try Self.audit(audit, outcome, in: session)
            return outcome
        }
    }

    package func mintForDebugToken(_ token: TokenRecord, at time: Int64) throws(StorageError) -> DebugTokenMint {
        guard let debugTokenID = token.debugTokenID else { throw .misuse("a debug token's access token names its debug token") }
        return try perform(.transaction) { session throws(StorageError) -> DebugTokenMint in
            // The integration first, as every other write, then the debug token's row, which its
            // revocation locks too: a mint and a revocation serialise on it.
            let state = try Self.integrationState(token.clientID, SharedSQL.lockIntegrationForKeyShare, in: session)
            guard let row = try session.row(DebugTokenSQL.lockForMint, [.text(debugTokenID)]), try row.isNull(0),
                try row.int64(1) > time, try row.text(2) == token.clientID, try row.blob(3) == token.keyID
            else { return .invalid }
            switch state {
            case .active: break
            case .suspended: return .integrationSuspended
            case .revoked, .missing: return .integrationRevoked
            }
            try session.run(SharedSQL.insertToken, token.storedValues)
            try session.run(DebugTokenSQL.countUse, [.integer(time), .text(debugTokenID)])
            return .minted
        }
    }
}

/// The statements of debug tokens, written once.
enum DebugTokenSQL {
    static let insert = SQLStatement(SQLText.insert(into: "debug_tokens", DebugTokenRecord.columns))
    static let liveCount = SQLStatement(
        "SELECT count(*) FROM debug_tokens WHERE client_id = ? AND revoked_at IS NULL AND expires_at > ?")
    private static let byIssue = SQLText.issueOrder(time: "created_at", key: "id")
    static let ofIntegration = SQLStatement(
        inIssueOrder: "SELECT \(SQLText.list(DebugTokenRecord.columns)) FROM debug_tokens WHERE client_id = ? ORDER BY \(byIssue)")
    static let byID = SQLStatement("SELECT \(SQLText.list(DebugTokenRecord.columns)) FROM debug_tokens WHERE id = ?")
    static let bySecretHash = SQLStatement("SELECT \(SQLText.list(DebugTokenRecord.columns)) FROM debug_tokens WHERE secret_hash = ?")
    static let lock = SQLStatement("SELECT revoked_at, key_id FROM debug_tokens WHERE id = ?", forPostgreSQL: " FOR UPDATE")
    static let lockForMint = SQLStatement(
        "SELECT revoked_at, expires_at, client_id, key_id FROM debug_tokens WHERE id = ?", forPostgreSQL: " FOR UPDATE")
    static let revoke = SQLStatement("UPDATE debug_tokens SET revoked_at = ? WHERE id = ?")
    static let countUse = SQLStatement("UPDATE debug_tokens SET last_used_at = ?, minted = minted + 1 WHERE id = ?")
    static let all = SQLStatement(inIssueOrder: "SELECT \(SQLText.list(DebugTokenRecord.columns)) FROM debug_tokens ORDER BY \(byIssue)")
}
