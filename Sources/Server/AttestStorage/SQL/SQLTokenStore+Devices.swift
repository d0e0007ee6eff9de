/// Registration, refresh, lookups and device administration, written once for both dialects.
extension SQLTokenStore {
    // MARK: DeviceStore

    package func registerDevice(
        _ device: DeviceRecord, firstToken: TokenRecord, consumingChallenge challengeID: [UInt8], at time: Int64, newKeyCap: NewKeyCap?
    ) throws(StorageError) -> RegistrationOutcome {
        try perform(.transaction) { session throws(StorageError) -> RegistrationOutcome in
            // The integration's row first, as in revocation, so that the two serialise in one lock
            // order and never deadlock: FOR KEY SHARE on PostgreSQL, or FOR UPDATE under a cap of
            // new keys, so that the integration's registrations count and insert one at a time.
            let lock = newKeyCap == nil ? SharedSQL.lockIntegrationForKeyShare : SharedSQL.lockIntegrationForUpdate
            let state = try Self.integrationState(device.clientID, lock, in: session)
            guard try Self.consume(challengeID, at: time, in: session) else { return .challengeUsed }
            switch state {
            case .active: break
            case .suspended: return .integrationSuspended
            case .revoked, .missing: return .integrationRevoked
            }
            if let newKeyCap,
                try session.count(SharedSQL.newKeyCount, [.text(device.clientID), .integer(newKeyCap.since)]) >= newKeyCap.maximum
            {
                return .newKeyCapReached
            }
            guard try session.run(SharedSQL.insertDevice, device.storedValues) == 1 else {
                guard let existing = try session.row(SharedSQL.deviceStatus, [.blob(device.keyID)]) else {
                    throw .conflict("the key ID conflicted and then was not found")
                }
                var reader = SQLRowReader(existing)
                return .keyExists(try reader.enumeration(DeviceStatus.self))
            }
            try session.run(SharedSQL.insertToken, firstToken.storedValues)
            return .registered
        }
    }

    package func device(keyID: [UInt8]) throws(StorageError) -> DeviceRecord? {
        try perform(.read) { session throws(StorageError) in try session.record(DeviceRecord.self, SharedSQL.selectDevice, [.blob(keyID)]) }
    }

    package func advanceCounter(
        keyID: [UInt8], from previous: UInt32, to counter: UInt32, at time: Int64, token: TokenRecord,
        consumingChallenge challengeID: [UInt8], keepingLatest: Int?
    ) throws(StorageError) -> CounterAdvance {
        try perform(.transaction) { session throws(StorageError) -> CounterAdvance in
            let state = try Self.integrationState(token.clientID, SharedSQL.lockIntegrationForKeyShare, in: session)
            guard try Self.consume(challengeID, at: time, in: session) else { return .challengeUsed }
            switch state {
            case .active: break
            case .suspended: return .integrationSuspended
            case .revoked, .missing: return .integrationRevoked
            }
            guard let status = try session.row(SharedSQL.deviceStatus, [.blob(keyID)]), try status.text(0) == DeviceStatus.active.rawValue
            else { return .deviceBlocked }
            let advanced = try session.run(
                SharedSQL.advanceCounter, [.integer(Int64(counter)), .integer(time), .blob(keyID), .integer(Int64(previous))])
            guard advanced == 1 else { return .counterChanged }
            try session.run(SharedSQL.insertToken, token.storedValues)
            if let keepingLatest {
                try session.run(SharedSQL.trimTokens, [.blob(keyID), .integer(Int64(keepingLatest))])
            }
            return .advanced
        }
    }

    package func newKeyCount(clientID: String, since: Int64) throws(StorageError) -> Int {
        try perform(.read) { session throws(StorageError) in try session.count(SharedSQL.newKeyCount, [.text(clientID), .integer(since)]) }
    }

    package func takeSharedToken(bucket: String, perSecond: Double, burst: Double, at now: Double) throws(StorageError) -> Int? {
        // Not durable: a bucket forgotten in a power cut only forgives.
        try perform(.transaction(durable: false)) { session throws(StorageError) -> Int? in
            try session.run(SharedSQL.createBucket, [.text(bucket), .real(burst), .real(now)])
            guard let row = try session.row(SharedSQL.lockBucket, [.text(bucket)]) else {
                throw .statementFailed("the rate bucket was not found after it was created")
            }
            var state = TokenBucket(tokens: try row.double(0), updatedAt: try row.double(1))
            let wait = state.take(perSecond: perSecond, burst: burst, now: now)
            try session.run(SharedSQL.updateBucket, [.real(state.tokens), .real(state.updatedAt), .text(bucket)])
            return wait
        }
    }

    // MARK: TokenLookupStore

    /// The lookup itself, one statement (SQLite's `activeToken` serves repeated ones from memory).
    func storedActiveToken(hash: [UInt8], at time: Int64) throws(StorageError) -> TokenRecord? {
        try perform(.read) { session throws(StorageError) in
            try session.record(TokenRecord.self, SharedSQL.selectActiveToken, [.blob(hash), .integer(time)])
        }
    }

    package func revokeToken(hash: [UInt8], audit: AuditNote<Bool>?) throws(StorageError) -> Bool {
        try retiringAnswers { session throws(StorageError) -> Bool in
            let workspace = audit?.workspaceID == nil ? try session.row(WorkspaceOfSQL.token, [.blob(hash)])?.text(0) : nil
            let found = try session.run(SharedSQL.deleteToken, [.blob(hash)]) == 1
            try Self.audit(audit?.inWorkspace(workspace), found, in: session)
            return found
        }
    }

    // MARK: Devices for administrators

    package func blockDevice(keyID: [UInt8], at time: Int64, audit: AuditNote<Int>?) throws(StorageError) -> Int? {
        try retiringAnswers { session throws(StorageError) -> Int? in
            guard try session.run(SharedSQL.blockDevice, [.integer(time), .blob(keyID)]) == 1 else { return nil }
            let workspace = audit?.workspaceID == nil ? try session.row(WorkspaceOfSQL.device, [.blob(keyID)])?.text(0) : nil
            let tokens = try session.run(SharedSQL.deleteTokensOfDevice, [.blob(keyID)])
            try Self.audit(audit?.inWorkspace(workspace), tokens, in: session)
            return tokens
        }
    }

    package func unblockDevice(keyID: [UInt8], at time: Int64, audit: AuditNote<Void>?) throws(StorageError) -> DeviceUnblock {
        try perform(.transaction) { session throws(StorageError) -> DeviceUnblock in
            guard try session.run(SharedSQL.unblockDevice, [.integer(time), .blob(keyID)]) == 1 else {
                guard let row = try session.row(SharedSQL.deviceAndIntegrationStatus, [.blob(keyID)]) else { return .notFound }
                return try row.text(1) == "revoked" ? .integrationRevoked : .notBlocked
            }
            let workspace = audit?.workspaceID == nil ? try session.row(WorkspaceOfSQL.device, [.blob(keyID)])?.text(0) : nil
            try Self.audit(audit?.inWorkspace(workspace), (), in: session)
            return .unblocked
        }
    }

    /// One page of the integration's devices, newest first, in one statement on a reader
    /// (SQLite) or in autocommit (PostgreSQL, within the session's statement timeout): a listing
    /// never holds the writer, and its answer is bounded by `query.limit`.
    package func devicePage(clientID: String, query: DeviceQuery, at time: Int64) throws(StorageError) -> DevicePage {
        var values: [SQLValue] = [.integer(time), .text(clientID)]
        values += query.status.map { [.text($0.rawValue), .text($0.rawValue)] } ?? [.text("active"), .text("revoked")]
        let statements = query.keyIDRange == nil ? DeviceListSQL.everyKey : DeviceListSQL.keyRange
        if let range = query.keyIDRange { values += [.blob(range[0]), .blob(range[1])] }
        let statement: SQLStatement
        switch query.after {
        case nil:
            statement = query.sort == .lastSeen ? statements.lastSeenFirstPage : statements.firstPage
        case let cursor? where query.sort == .lastSeen:
            statement = statements.lastSeenAfter
            values += [.integer(cursor.lastSeen ?? Int64.max), .blob(cursor.keyID)]
        case let cursor? where cursor.order != nil:
            statement = statements.afterOrdered
            values.append(.integer(cursor.order ?? 0))
        case let cursor?:
            statement = statements.afterUnordered
            values += [.integer(cursor.createdAt), .blob(cursor.keyID)]
        }
        values.append(.integer(Int64(query.limit + 1)))
        let rows = try perform(.read) { session throws(StorageError) in try session.records(DeviceListEntry.self, statement, values) }
        let page = Array(rows.prefix(query.limit))
        guard rows.count > query.limit, let last = page.last else { return DevicePage(devices: page, next: nil) }
        var next = last.cursor
        if query.sort == .lastSeen { next.lastSeen = last.updatedAt }
        return DevicePage(devices: page, next: next)
    }

    package func liveTokens(keyID: [UInt8], at time: Int64, limit: Int) throws(StorageError) -> [TokenRecord] {
        try perform(.read) { session throws(StorageError) in
            try session.records(TokenRecord.self, WorkspaceOfSQL.liveTokensOfKey, [.blob(keyID), .integer(time), .integer(Int64(limit))])
        }
    }

    package func liveTokenCount(keyID: [UInt8], at time: Int64) throws(StorageError) -> Int {
        try perform(.read) { session throws(StorageError) in try session.count(SharedSQL.liveTokenCount, [.blob(keyID), .integer(time)]) }
    }
}

/// The statements of the device listing: newest first by order of issue (as every listing,
/// `SQLText.issueOrder`), a page after a cursor found through the index on the integration
/// (SQLite's rowid rides in `devices_by_client`), with the live tokens of each row counted by key.
/// A key ID prefix is a range on the primary key, in statements of its own: with it in every
/// statement, SQLite's planner chose the whole key range over the integration's index and
/// sorted 100,000 rows for each page (0.5 s a page, measured by scripts/check admin-load).
struct DeviceListSQL {
    let firstPage: SQLStatement
    /// After a row with an order of issue: the older ones, then (PostgreSQL) every row from
    /// before migration 0012, which has none and comes last.
    let afterOrdered: SQLStatement
    /// After a row from before migration 0012 (PostgreSQL only): the older ones of those.
    let afterUnordered: SQLStatement
    /// By last activity, most recent first (through `devices_by_client_and_use`), and after a row.
    let lastSeenFirstPage: SQLStatement
    let lastSeenAfter: SQLStatement

    static let everyKey = DeviceListSQL(keyRange: false)
    static let keyRange = DeviceListSQL(keyRange: true)

    private init(keyRange: Bool) {
        func page(after condition: String, orderBy: String = SharedSQL.devicesByIssue(newestFirst: true)) -> String {
            """
            SELECT \(SQLText.list(DeviceListEntry.columns)),
                (SELECT count(*) FROM tokens t WHERE t.key_id = devices.key_id AND t.expires_at > ?), \(SQLText.issueOrder)
            FROM devices
            WHERE client_id = ? AND status IN (?, ?) \(keyRange ? "AND key_id >= ? AND key_id <= ?" : "") \(condition)
            ORDER BY \(orderBy) LIMIT ?
            """
        }
        let byUse = "updated_at DESC, key_id DESC"
        lastSeenFirstPage = SQLStatement(inIssueOrder: page(after: "", orderBy: byUse))
        lastSeenAfter = SQLStatement(inIssueOrder: page(after: "AND (updated_at, key_id) < (?, ?)", orderBy: byUse))
        firstPage = SQLStatement(inIssueOrder: page(after: ""))
        afterOrdered = SQLStatement(
            sqlite: SQLText.issueOrder(in: page(after: "AND rowid < ?"), for: .sqlite),
            postgresql: SQLText.issueOrder(in: SQLStatement.numbered(page(after: "AND (seq < ? OR seq IS NULL)")), for: .postgresql))
        afterUnordered = SQLStatement(inIssueOrder: page(after: "AND \(SQLText.issueOrder) IS NULL AND (created_at, key_id) < (?, ?)"))
    }
}

/// The workspace of a token and of a device, for the audit row of a change made outside it (by
/// attestctl or the gateway): its workspace's admins see it too.
enum WorkspaceOfSQL {
    static let token = SQLStatement("SELECT workspace_id FROM tokens WHERE token_hash = ?")
    static let device = SQLStatement(
        "SELECT i.workspace_id FROM devices d JOIN integrations i ON i.client_id = d.client_id WHERE d.key_id = ?")
    /// A device's live tokens, newest first (the console's device row).
    static let liveTokensOfKey = SQLStatement(
        inIssueOrder: """
            SELECT \(SQLText.list(TokenRecord.columns)) FROM tokens WHERE key_id = ? AND expires_at > ?
            ORDER BY \(SQLText.issueOrder(time: "issued_at", key: "token_hash", newestFirst: true)) LIMIT ?
            """)
}
