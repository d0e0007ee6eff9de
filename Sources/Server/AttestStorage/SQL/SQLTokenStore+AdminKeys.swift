/// Admin keys, console sessions and the workspace-scoped reads of the admin API, written once for
/// both dialects.
extension SQLTokenStore {
    package func insertAdminKey(_ key: AdminKeyRecord, audit: AuditNote<Void>?) throws(StorageError) {
        try perform(.transaction) { session throws(StorageError) in
            // A live key's name is unique in its workspace (audit rows name keys by it); checked
            // under the workspace's keys' lock of this transaction (SQLite's writer; PostgreSQL:
            // the advisory lock below), so two creations cannot both pass.
            try session.run(AdminKeySQL.lockWorkspaceKeys, [.text(key.workspaceID)])
            guard try session.count(AdminKeySQL.liveNamed, [.text(key.workspaceID), .text(key.name)]) == 0 else {
                throw .constraint("a live admin key of this workspace has this name")
            }
            // One live primary owner per workspace (the service says so first; this holds it
            // against two creations at once).
            if key.role == .primaryOwner, try session.count(AdminKeySQL.livePrimaryOwners, [.text(key.workspaceID)]) > 0 {
                throw .constraint("this workspace has a live primary owner")
            }
            try session.run(AdminKeySQL.insertKey, key.storedValues)
            try Self.audit(audit, (), in: session)
        }
    }

    package func adminKey(id: String) throws(StorageError) -> AdminKeyRecord? {
        try perform(.read) { session throws(StorageError) in try session.record(AdminKeyRecord.self, AdminKeySQL.keyByID, [.text(id)]) }
    }

    package func activeAdminKey(hash: [UInt8], at time: Int64) throws(StorageError) -> AdminKeyRecord? {
        try perform(.read) { session throws(StorageError) in
            try session.record(AdminKeyRecord.self, AdminKeySQL.activeKeyByHash, [.blob(hash), .integer(time)])
        }
    }

    package func disableAdminKey(id: String, at time: Int64?, audit: AuditNote<Bool>?) throws(StorageError) -> Bool? {
        try perform(.transaction) { session throws(StorageError) -> Bool? in
            guard try session.row(AdminKeySQL.lockKey, [.text(id)]) != nil else { return nil }
            let changed: Bool
            if let time {
                changed = try session.run(AdminKeySQL.disableKey, [.integer(time), .text(id)]) == 1
                // A disabled key's sessions end (enabling it again does not revive them).
                try session.run(AdminKeySQL.deleteSessionsOfKey, [.text(id)])
            } else {
                changed = try session.run(AdminKeySQL.enableKey, [.text(id)]) == 1
            }
            try Self.audit(audit, changed, in: session)
            return changed
        }
    }

    package func noteAdminKeyUse(id: String, at time: Int64) throws(StorageError) {
        try perform(.statement(durable: false)) { session throws(StorageError) in
            try session.run(AdminKeySQL.noteUse, [.integer(time), .text(id), .integer(time - AdminKeySQL.useResolution)])
        }
    }

    package func adminKeys(workspaceID: String?) throws(StorageError) -> [AdminKeyRecord] {
        try perform(.read) { session throws(StorageError) in
            if let workspaceID {
                return try session.records(AdminKeyRecord.self, AdminKeySQL.keysOfWorkspace, [.text(workspaceID)])
            }
            return try session.records(AdminKeyRecord.self, AdminKeySQL.allKeys, [])
        }
    }

    package func revokeAdminKey(id: String, at time: Int64, audit: AuditNote<Bool>?) throws(StorageError) -> Bool? {
        try perform(.transaction) { session throws(StorageError) -> Bool? in
            guard try session.row(AdminKeySQL.lockKey, [.text(id)]) != nil else { return nil }
            let changed = try session.run(AdminKeySQL.revokeKey, [.integer(time), .text(id)]) == 1
            // Sessions die with their key (the lookup checks the key too; this removes the rows).
            try session.run(AdminKeySQL.deleteSessionsOfKey, [.text(id)])
            try Self.audit(audit, changed, in: session)
            return changed
        }
    }

    @discardableResult
    package func insertAdminSession(
        _ record: AdminSessionRecord, keepingLatest: Int, audit: AuditNote<Int>?
    ) throws(StorageError) -> Int {
        try perform(.transaction) { session throws(StorageError) -> Int in
            try session.run(AdminKeySQL.insertSession, record.storedValues)
            let ended = try session.run(
                AdminKeySQL.endOldestSessions, [.text(record.keyID), .blob(record.sessionHash), .integer(Int64(max(0, keepingLatest - 1)))])
            try Self.audit(audit, ended, in: session)
            return ended
        }
    }

    package func liveAdminSession(hash: [UInt8], at time: Int64) throws(StorageError) -> LiveAdminSession? {
        try perform(.read) { session throws(StorageError) in
            try session.record(LiveAdminSession.self, AdminKeySQL.liveSession, [.blob(hash), .integer(time)])
        }
    }

    package func extendAdminSession(hash: [UInt8], to expiresAt: Int64) throws(StorageError) {
        try perform(.statement) { session throws(StorageError) in
            try session.run(AdminKeySQL.extendSession, [.integer(expiresAt), .blob(hash), .integer(expiresAt)])
        }
    }

    package func adminSessions(keyID: String, at time: Int64) throws(StorageError) -> [AdminSessionRecord] {
        try perform(.read) { session throws(StorageError) in
            try session.records(AdminSessionRecord.self, AdminKeySQL.sessionsOfKey, [.text(keyID), .integer(time)])
        }
    }

    package func deleteAdminSessions(keyID: String, keeping: [UInt8]) throws(StorageError) -> Int {
        try perform(.statement) { session throws(StorageError) in
            try session.run(AdminKeySQL.deleteOtherSessions, [.text(keyID), .blob(keeping)])
        }
    }

    package func deleteAdminSession(hash: [UInt8]) throws(StorageError) -> Bool {
        try perform(.statement) { session throws(StorageError) -> Bool in try session.run(AdminKeySQL.deleteSession, [.blob(hash)]) == 1 }
    }

    package func integrations(workspaceID: String) throws(StorageError) -> [IntegrationRecord] {
        try perform(.read) { session throws(StorageError) in
            try session.records(IntegrationRecord.self, AdminKeySQL.integrationsOfWorkspace, [.text(workspaceID)])
        }
    }

    package func integrationCounts(workspaceID: String, at time: Int64) throws(StorageError) -> [String: IntegrationCounts] {
        try perform(.snapshot) { session throws(StorageError) -> [String: IntegrationCounts] in
            var counts: [String: IntegrationCounts] = [:]
            for row in try session.rows(AdminKeySQL.devicesByIntegration, [.text(workspaceID)]) {
                counts[try row.text(0), default: IntegrationCounts(devices: 0, liveTokens: 0)].devices = Int(try row.int64(1))
            }
            for row in try session.rows(AdminKeySQL.liveTokensByIntegration, [.text(workspaceID), .integer(time)]) {
                counts[try row.text(0), default: IntegrationCounts(devices: 0, liveTokens: 0)].liveTokens = Int(try row.int64(1))
            }
            return counts
        }
    }

    package func token(hash: [UInt8]) throws(StorageError) -> TokenRecord? {
        try perform(.read) { session throws(StorageError) in try session.record(TokenRecord.self, AdminKeySQL.tokenByHash, [.blob(hash)]) }
    }

}

extension SQLTokenStore {
    /// One page of the audit log, newest first, on a reader (SQLite) or in autocommit
    /// (PostgreSQL): a workspace's rows are those written in it and, from before attestctl named
    /// the workspace of what it changed, attestctl's rows whose target is one of its integrations.
    package func auditPage(_ query: AuditQuery) throws(StorageError) -> AuditPage {
        var values: [SQLValue] = []
        if let workspaceID = query.workspaceID { values.append(.text(workspaceID)) }
        let actions = query.actions.isEmpty ? "" : "," + query.actions.map(\.rawValue).sorted().joined(separator: ",") + ","
        values += [
            .integer(query.before ?? Int64.max), .text(actions), .text(actions), .text("%" + Self.likeEscaped(query.actor ?? "") + "%"),
            .text(Self.likeEscaped(query.target ?? "") + "%"), .integer(query.from ?? Int64.min), .integer(query.to ?? Int64.max),
            .integer(Int64(query.limit + 1)),
        ]
        let statement = query.workspaceID == nil ? AuditSQL.everyRow : AuditSQL.ofWorkspace
        let rows = try perform(.read) { session throws(StorageError) in try session.records(AuditListEntry.self, statement, values) }
        let page = Array(rows.prefix(query.limit))
        return AuditPage(entries: page, next: rows.count > query.limit ? page.last?.id : nil)
    }

    /// `text` matched literally by `LIKE ... ESCAPE '\'`.
    static func likeEscaped(_ text: String) -> String {
        var out = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out
    }
}

/// The audit log's page, written once: the filters every page applies after the rows' scope.
enum AuditSQL {
    private static func page(scope: String) -> String {
        """
        SELECT \(SQLText.list(AuditListEntry.columns)) FROM audit_log
        WHERE \(scope) id < ? AND (? = '' OR ? LIKE '%,' || action || ',%') AND actor LIKE ? ESCAPE '\\' AND target LIKE ? ESCAPE '\\'
            AND at >= ? AND at <= ?
        ORDER BY id DESC LIMIT ?
        """
    }

    static let everyRow = SQLStatement(page(scope: ""))
    static let ofWorkspace = SQLStatement(
        page(
            scope: """
                (workspace_id = ? OR (workspace_id IS NULL AND target IN (SELECT client_id FROM integrations WHERE workspace_id = ?1))) AND
                """))
}

/// The statements of admin keys and sessions, written once.
enum AdminKeySQL {
    private static let byIssue = SQLText.issueOrder(time: "created_at", key: "id")
    static let insertKey = SQLStatement(SQLText.insert(into: "admin_keys", AdminKeyRecord.columns))
    static let keyByID = SQLStatement("SELECT \(SQLText.list(AdminKeyRecord.columns)) FROM admin_keys WHERE id = ?")
    /// A key neither revoked, disabled nor expired at `?2` (`AdminKeyRecord.status`; a session's
    /// key is held to the same in `liveSession`).
    static let activeKeyByHash = SQLStatement(
        """
        SELECT \(SQLText.list(AdminKeyRecord.columns)) FROM admin_keys
        WHERE key_hash = ?1 AND revoked_at IS NULL AND disabled_at IS NULL AND (expires_at IS NULL OR expires_at > ?2)
        """)
    static let keysOfWorkspace = SQLStatement(
        inIssueOrder: "SELECT \(SQLText.list(AdminKeyRecord.columns)) FROM admin_keys WHERE workspace_id = ? ORDER BY \(byIssue)")
    static let allKeys = SQLStatement(
        inIssueOrder: "SELECT \(SQLText.list(AdminKeyRecord.columns)) FROM admin_keys ORDER BY workspace_id, \(byIssue)")
    static let livePrimaryOwners = SQLStatement(
        "SELECT count(*) FROM admin_keys WHERE workspace_id = ? AND role = 'primary_owner' AND revoked_at IS NULL")
    static let liveNamed = SQLStatement("SELECT count(*) FROM admin_keys WHERE workspace_id = ? AND name = ? AND revoked_at IS NULL")
    /// Serialises the creation of a workspace's keys on PostgreSQL (a transaction-scoped advisory
    /// lock on the workspace's name); SQLite's writer transaction holds its one lock already.
    static let lockWorkspaceKeys = SQLStatement(
        sqlite: "SELECT ?1 IS NULL", postgresql: "SELECT pg_advisory_xact_lock(hashtextextended('admin-keys:' || $1, 0))")
    static let lockKey = SQLStatement("SELECT revoked_at FROM admin_keys WHERE id = ?", forPostgreSQL: " FOR UPDATE")
    static let revokeKey = SQLStatement("UPDATE admin_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL")
    static let disableKey = SQLStatement(
        "UPDATE admin_keys SET disabled_at = ? WHERE id = ? AND revoked_at IS NULL AND disabled_at IS NULL")
    static let enableKey = SQLStatement(
        "UPDATE admin_keys SET disabled_at = NULL WHERE id = ? AND revoked_at IS NULL AND disabled_at IS NOT NULL")
    /// A key's last use is kept to the minute: a busy key writes once a minute, not per request.
    static let useResolution: Int64 = 60
    static let noteUse = SQLStatement("UPDATE admin_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)")
    static let deleteSessionsOfKey = SQLStatement("DELETE FROM admin_sessions WHERE key_id = ?")
    static let insertSession = SQLStatement(SQLText.insert(into: "admin_sessions", AdminSessionRecord.columns))
    /// The session's key, only while the session is unexpired and the key neither revoked,
    /// disabled nor expired: both are read on every request, so a sign-out or a key's revocation
    /// ends the session at once.
    static let liveSession = SQLStatement(
        """
        SELECT \(SQLText.list(LiveAdminSession.columns))
        FROM admin_sessions s JOIN admin_keys k ON k.id = s.key_id
        WHERE s.session_hash = ?1 AND s.expires_at > ?2
            AND k.revoked_at IS NULL AND k.disabled_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ?2)
        """)
    /// The key's sessions other than `?2`, all but the newest `?3` of them.
    static let endOldestSessions = SQLStatement(
        """
        DELETE FROM admin_sessions WHERE key_id = ?1 AND session_hash <> ?2 AND session_hash NOT IN (
            SELECT session_hash FROM admin_sessions WHERE key_id = ?1 AND session_hash <> ?2
            ORDER BY created_at DESC, expires_at DESC, session_hash LIMIT ?3)
        """)
    /// Never moves an expiry back, nor revives an expired session.
    static let extendSession = SQLStatement("UPDATE admin_sessions SET expires_at = ? WHERE session_hash = ? AND expires_at < ?")
    static let sessionsOfKey = SQLStatement(
        "SELECT \(SQLText.list(AdminSessionRecord.columns)) FROM admin_sessions WHERE key_id = ? AND expires_at > ? ORDER BY created_at DESC"
    )
    static let deleteOtherSessions = SQLStatement("DELETE FROM admin_sessions WHERE key_id = ? AND session_hash <> ?")
    /// Sign-ins' audit rows past their retention (`AuditQuery.signInRetention`).
    static let purgeSignIns = SQLStatement("DELETE FROM audit_log WHERE action = 'console.sign-in' AND at < ?")
    static let deleteSession = SQLStatement("DELETE FROM admin_sessions WHERE session_hash = ?")
    static let purgeSessions = SQLStatement("DELETE FROM admin_sessions WHERE expires_at <= ?")
    static let integrationsOfWorkspace = IntegrationRecord.select("WHERE workspace_id = ? ORDER BY \(SharedSQL.integrationsByIssue)")
    static let devicesByIntegration = SQLStatement(
        """
        SELECT d.client_id, count(*) FROM devices d JOIN integrations i ON i.client_id = d.client_id
        WHERE i.workspace_id = ? GROUP BY d.client_id
        """)
    static let liveTokensByIntegration = SQLStatement(
        """
        SELECT t.client_id, count(*) FROM tokens t JOIN integrations i ON i.client_id = t.client_id
        WHERE i.workspace_id = ? AND t.expires_at > ? GROUP BY t.client_id
        """)
    static let tokenByHash = SQLStatement("SELECT \(SQLText.list(TokenRecord.columns)) FROM tokens WHERE token_hash = ?")
}
