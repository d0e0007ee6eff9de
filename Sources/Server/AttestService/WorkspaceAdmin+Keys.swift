import AttestCrypto
import AttestStorage

/// A newly issued admin key: its record, and the secret, shown once and never stored.
package struct IssuedAdminKey: Sendable {
    package let record: AdminKeyRecord
    /// `adm_` and 256 random bits (base64url, 43 characters).
    package let secret: String
}

/// A console sign-in: the principal, the cookie's value (shown to the browser once, stored only
/// as its SHA-256) and when the session ends.
package struct AdminSession: Sendable {
    package let principal: AdminPrincipal
    package let secret: String
    package let expiresAt: Int64
}

/// Admin keys and console sessions: issuing, listing, disabling, enabling and revoking keys
/// (attestctl, and owners through the API), authenticating a presented key or session.
extension WorkspaceAdmin {
    /// The prefix of an admin key's secret.
    package static let keyPrefix = "adm_"
    /// The prefix of an admin key's public ID.
    package static let keyIDPrefix = "admk_"

    /// The lifetimes a key can be given, in seconds (one hour to two years; it may also have none).
    package static let keyLifetimes: ClosedRange<Int64> = 3_600...(730 * 86_400)

    /// Issues a key of `role` in `workspaceID`, audited as `actor`'s action in that workspace;
    /// refused `expiresIn` seconds from now when given (within `keyLifetimes`).
    package func issueKey(
        workspaceID: String, role: AdminRole, name: String, expiresIn: Int64? = nil, actor: String
    ) throws(ServiceError) -> IssuedAdminKey {
        guard IntegrationAdmin.isValidIdentifier(workspaceID) else {
            throw ServiceError.invalidIntegration(.workspaceID, "workspace ID must be 1 to 64 of A-Z a-z 0-9 _ -")
        }
        try Self.requireValidName(name)
        if let expiresIn, !Self.keyLifetimes.contains(expiresIn) {
            throw ServiceError.malformed(.field(.expiresIn), "an admin key's expiry is from one hour to 730 days away, or none")
        }
        if role == .primaryOwner,
            try stored({ () throws(StorageError) in try store.adminKeys(workspaceID: workspaceID) })
                .contains(where: { $0.role == .primaryOwner && $0.revokedAt == nil })
        {
            throw ServiceError.malformed(
                .field(.role),
                "a workspace has one primary owner, and this one has a live primary owner's key: the operator revokes it first "
                    + "(attestctl admin-key revoke), then creates the new one")
        }
        let secret = Self.keyPrefix + Base64Text.encode(try random.bytesOrFail(32), .url)
        let now = clock.now()
        let record = AdminKeyRecord(
            id: Self.keyIDPrefix + Hex.encode(try random.bytesOrFail(8)), keyHash: Digest.sha256(Array(secret.utf8)),
            workspaceID: workspaceID, role: role, name: name, createdAt: now, expiresAt: expiresIn.map { now + $0 })
        let audit = AuditNote<Void>(
            at: record.createdAt, actor: actor, action: .adminKeyCreate, target: record.id, workspaceID: workspaceID
        ) { _ in "role \(role.rawValue), name \(name)" + (record.expiresAt.map { ", expires at \($0)" } ?? "") }
        do {
            try store.insertAdminKey(record, audit: audit)
        } catch  where error.code == .constraint {
            // The ID and the hash are random: the one constraint a new key can meet is its name.
            throw ServiceError.malformed(
                .field(.name), "a live admin key of this workspace is already named '\(name)': choose another name")
        } catch {
            throw ServiceError.storage(error)
        }
        logger?.log(
            .info, "admin key created",
            ["admin_key.id": .string(record.id), "workspace.id": .string(workspaceID), "role": .string(role.rawValue)])
        return IssuedAdminKey(record: record, secret: secret)
    }

    /// Every key, or one workspace's (attestctl).
    package func keys(workspaceID: String?) throws(ServiceError) -> [AdminKeyRecord] {
        try stored { () throws(StorageError) in try store.adminKeys(workspaceID: workspaceID) }
    }

    /// Revokes a key as `actor` (attestctl): nil when unknown, false when revoked already.
    package func revokeKey(id: String, actor: String) throws(ServiceError) -> Bool? {
        guard let key = try stored({ () throws(StorageError) in try store.adminKey(id: id) }) else { return nil }
        return try revoke(key, actor: actor)
    }

    /// What `revokeCompromised` did: the keys it revoked (the leaked one first, then those it
    /// created, and theirs), those already revoked, and every change the leaked key made, newest
    /// first, for the operator to review.
    package struct CompromisedKeyReport: Sendable {
        package var revoked: [AdminKeyRecord] = []
        package var alreadyRevoked: [AdminKeyRecord] = []
        package var changes: [AuditListEntry] = []
    }

    /// A leaked admin key: revokes it, and every key it created (and they created, and so on: the
    /// audit log's `admin-key.create` rows name the creator), so that no key the holder of the leak
    /// made for themself stays behind; returns them with the leaked key's changes. Nil when no
    /// such key.
    /// `sparing` (the console's caller) is neither revoked nor followed: the keys it made are its own.
    package func revokeCompromised(id: String, actor: String, sparing: String? = nil) throws(ServiceError) -> CompromisedKeyReport? {
        guard let leaked = try stored({ () throws(StorageError) in try store.adminKey(id: id) }) else { return nil }
        var report = CompromisedKeyReport()
        var queue = [leaked]
        var seen: Set<String> = [leaked.id]
        while !queue.isEmpty {
            let key = queue.removeFirst()
            if key.id == sparing { continue }
            if try revoke(key, actor: actor) == true { report.revoked.append(key) } else { report.alreadyRevoked.append(key) }
            for created in try rows(AuditQuery(workspaceID: key.workspaceID, actions: [.adminKeyCreate], actor: "(\(key.id))")) {
                let target = created.entry.target
                guard !seen.contains(target), let child = try stored({ () throws(StorageError) in try store.adminKey(id: target) })
                else { continue }
                seen.insert(target)
                queue.append(child)
            }
        }
        report.changes = try rows(
            AuditQuery(
                workspaceID: leaked.workspaceID, actions: AuditAction.changes, actor: "(\(leaked.id))"))
        logger?.log(
            .warning, "compromised admin key revoked", ["admin_key.id": .string(leaked.id), "keys_revoked": .int(report.revoked.count)])
        return report
    }

    /// Every row `query` selects, a page at a time.
    private func rows(_ query: AuditQuery) throws(ServiceError) -> [AuditListEntry] {
        var query = query
        query.limit = AuditQuery.maximumLimit
        var all: [AuditListEntry] = []
        while true {
            let page = try stored { () throws(StorageError) in try store.auditPage(query) }
            all += page.entries
            guard let next = page.next else { return all }
            query.before = next
        }
    }

    private func revoke(_ key: AdminKeyRecord, actor: String) throws(ServiceError) -> Bool? {
        let audit = AuditNote<Bool>(
            at: clock.now(), actor: actor, action: .adminKeyRevoke, target: key.id, workspaceID: key.workspaceID
        ) { changed in changed ? "revoked; its sessions ended" : nil }
        let changed = try stored { () throws(StorageError) in try store.revokeAdminKey(id: key.id, at: audit.at, audit: audit) }
        if changed == true { logger?.log(.warning, "admin key revoked", ["admin_key.id": .string(key.id)]) }
        return changed
    }

    /// Disables (`disabled` true) or enables a key as `actor` (attestctl): nil when unknown, false
    /// when there was nothing to change (already so, or revoked).
    package func setKeyDisabled(id: String, _ disabled: Bool, actor: String) throws(ServiceError) -> Bool? {
        guard let key = try stored({ () throws(StorageError) in try store.adminKey(id: id) }) else { return nil }
        return try setDisabled(key, disabled, actor: actor)
    }

    private func setDisabled(_ key: AdminKeyRecord, _ disabled: Bool, actor: String) throws(ServiceError) -> Bool? {
        let audit = AuditNote<Bool>(
            at: clock.now(), actor: actor, action: disabled ? .adminKeyDisable : .adminKeyEnable, target: key.id,
            workspaceID: key.workspaceID
        ) { changed in changed ? (disabled ? "disabled; its sessions ended" : "enabled") : nil }
        let changed = try stored { () throws(StorageError) in
            try store.disableAdminKey(id: key.id, at: disabled ? audit.at : nil, audit: audit)
        }
        if changed == true {
            logger?.log(.warning, disabled ? "admin key disabled" : "admin key enabled", ["admin_key.id": .string(key.id)])
        }
        return changed
    }

    /// The workspace's keys (owners).
    package func keys(_ principal: AdminPrincipal) throws(ServiceError) -> [AdminKeyRecord] {
        try require(principal, Self.keyRole, to: "manage admin keys")
        return try keys(workspaceID: principal.workspaceID)
    }

    /// Issues a key in the owner's workspace, of a role no higher than the owner's own.
    package func createKey(
        _ principal: AdminPrincipal, name: String, role: AdminRole, expiresIn: Int64? = nil
    ) throws(ServiceError) -> IssuedAdminKey {
        try require(principal, Self.keyRole, to: "manage admin keys")
        guard role <= principal.role else {
            throw ServiceError.forbiddenRole(principal.role, needs: role, to: "create a key of the \(role.rawValue) role")
        }
        return try issueKey(workspaceID: principal.workspaceID, role: role, name: name, expiresIn: expiresIn, actor: principal.actor)
    }

    /// Revokes a key of the owner's workspace whose role is no higher than the owner's own.
    package func revokeKey(_ principal: AdminPrincipal, id: String) throws(ServiceError) {
        let key = try manageableKey(principal, id: id, to: "revoke")
        guard try revoke(key, actor: principal.actor) != nil else { throw ServiceError.adminKeyNotFound }
    }

    /// A leaked key of the owner's workspace, under the rules of `revokeKey`: it and every key it
    /// created (and they created), but the caller's own, as `attestctl admin-key revoke
    /// --compromised` does.
    package func revokeCompromisedKey(_ principal: AdminPrincipal, id: String) throws(ServiceError) -> CompromisedKeyReport {
        let key = try manageableKey(principal, id: id, to: "revoke")
        guard let report = try revokeCompromised(id: key.id, actor: principal.actor, sparing: principal.keyID) else {
            throw ServiceError.adminKeyNotFound
        }
        return report
    }

    /// Disables or enables a key of the owner's workspace, under the rules of `revokeKey`: the key
    /// as it is now, and whether this changed it (not when it was so already, or revoked).
    package func setKeyDisabled(
        _ principal: AdminPrincipal, id: String, _ disabled: Bool
    ) throws(ServiceError) -> (key: AdminKeyRecord, changed: Bool) {
        let key = try manageableKey(principal, id: id, to: disabled ? "disable" : "enable")
        guard let changed = try setDisabled(key, disabled, actor: principal.actor),
            let now = try stored({ () throws(StorageError) in try store.adminKey(id: id) })
        else { throw ServiceError.adminKeyNotFound }
        return (now, changed)
    }

    /// The key `id` of the principal's workspace, if the principal may revoke, disable or enable it
    /// (`verb`): an owner or above, not the key itself, a role no higher than its own, never the
    /// primary owner's.
    private func manageableKey(_ principal: AdminPrincipal, id: String, to verb: String) throws(ServiceError) -> AdminKeyRecord {
        try require(principal, Self.keyRole, to: "manage admin keys")
        guard let key = try stored({ () throws(StorageError) in try store.adminKey(id: id) }), key.workspaceID == principal.workspaceID
        else { throw ServiceError.adminKeyNotFound }
        // Why not itself: the console would sign its holder out mid-action, and a fuzzer or a script
        // listing keys would lock the workspace's last owner out. attestctl can change any key.
        guard key.id != principal.keyID else {
            throw ServiceError.malformed(.ownKey, "a key cannot \(verb) itself; use another owner's key or attestctl")
        }
        guard key.role <= principal.role else {
            throw ServiceError.forbiddenRole(principal.role, needs: key.role, to: "\(verb) a key of the \(key.role.rawValue) role")
        }
        // The primary owner's key is changed by no other key: only the operator moves ownership.
        guard key.role != .primaryOwner else {
            throw ServiceError.forbiddenRole(
                principal.role, needs: .primaryOwner, to: "\(verb) the primary owner's key (only attestctl does)")
        }
        return key
    }

    // MARK: Authentication

    /// The principal of a presented key; `unauthorized` for a malformed or unknown one, or one
    /// revoked, disabled or expired. Read from the store on every request (no cache), so a
    /// revocation takes effect at once; the use is recorded (to the minute).
    package func authenticate(key: String) throws(ServiceError) -> AdminPrincipal {
        // Why the shape is checked first: only a well-formed key costs a lookup, and the lookup is
        // by the SHA-256 of the whole key, an index probe that reveals nothing by its timing.
        guard key.hasPrefix(Self.keyPrefix), key.utf8.count == Self.keyPrefix.utf8.count + 43 else {
            throw ServiceError.adminUnauthenticated
        }
        let now = clock.now()
        guard
            let record = try stored({ () throws(StorageError) in try store.activeAdminKey(hash: Digest.sha256(Array(key.utf8)), at: now) })
        else { throw ServiceError.adminUnauthenticated }
        noteUse(record, at: now)
        return AdminPrincipal(record)
    }

    /// Records a key's use unless the one recorded is less than a minute old (no write then).
    /// Bookkeeping only: a write that fails (a busy writer) never refuses the request it records.
    private func noteUse(_ key: AdminKeyRecord, at time: Int64) {
        if let last = key.lastUsedAt, time - last < 60 { return }
        do {
            try store.noteAdminKeyUse(id: key.id, at: time)
        } catch {
            logger?.log(
                .warning, "an admin key's last use not recorded", ["admin_key.id": .string(key.id), "error": .string(error.reason)])
        }
    }

    /// Exchanges a key for a console session (audited as the key's sign-in). Limited per client
    /// address before the key is even looked up (guessing is slowed), then per key; past either,
    /// `rate_limited` with the seconds to wait. A key's sessions beyond `sessions.maximumPerKey`
    /// end, oldest first.
    package func signIn(key: String, address: String = "") throws(ServiceError) -> AdminSession {
        let now = clock.now()
        if let wait = signIns.take(.address(address), limit: sessions.signInsPerAddress, now: clock.preciseNow()) {
            throw ServiceError.rateLimited(retryAfter: wait)
        }
        let principal = try authenticate(key: key)
        if let wait = signIns.take(.signIns(keyID: principal.keyID), limit: sessions.signInsPerKey, now: clock.preciseNow()) {
            throw ServiceError.rateLimited(retryAfter: wait)
        }
        let secret = Base64Text.encode(try random.bytesOrFail(32), .url)
        let record = AdminSessionRecord(
            sessionHash: Digest.sha256(Array(secret.utf8)), keyID: principal.keyID, createdAt: now,
            expiresAt: sessions.expiry(createdAt: now, now: now))
        let audit = AuditNote<Int>(
            at: now, actor: principal.actor, action: .consoleSignIn, target: principal.keyID, workspaceID: principal.workspaceID
        ) { ended in "session until \(record.expiresAt)" + (ended > 0 ? ", \(ended) older sessions ended" : "") }
        _ = try stored { () throws(StorageError) in
            try store.insertAdminSession(record, keepingLatest: sessions.maximumPerKey, audit: audit)
        }
        return AdminSession(principal: principal, secret: secret, expiresAt: record.expiresAt)
    }

    /// The principal of a session cookie's value while the session is live and its key usable
    /// (neither revoked, disabled nor expired).
    /// A use renews the idle timeout (written at most once a minute).
    package func session(_ secret: String) throws(ServiceError) -> AdminPrincipal {
        guard secret.utf8.count == 43 else { throw ServiceError.adminUnauthenticated }
        let now = clock.now()
        let hash = Digest.sha256(Array(secret.utf8))
        guard let live = try stored({ () throws(StorageError) in try store.liveAdminSession(hash: hash, at: now) }) else {
            throw ServiceError.adminUnauthenticated
        }
        let renewed = sessions.expiry(createdAt: live.session.createdAt, now: now)
        if renewed - live.session.expiresAt >= 60 {
            try stored { () throws(StorageError) in try store.extendAdminSession(hash: hash, to: renewed) }
        }
        noteUse(live.key, at: now)
        return AdminPrincipal(live.key)
    }

    /// The live sessions of the principal's key, newest first, and which is `current`.
    package func sessions(_ principal: AdminPrincipal, current secret: String) throws(ServiceError) -> [(AdminSessionRecord, current: Bool)]
    {
        let hash = Digest.sha256(Array(secret.utf8))
        let records = try stored { () throws(StorageError) in try store.adminSessions(keyID: principal.keyID, at: clock.now()) }
        return records.map { ($0, current: $0.sessionHash == hash) }
    }

    /// Ends every other session of the principal's key (a lost laptop, a shared browser); how many.
    package func endOtherSessions(_ principal: AdminPrincipal, current secret: String) throws(ServiceError) -> Int {
        let hash = Digest.sha256(Array(secret.utf8))
        let ended = try stored { () throws(StorageError) in try store.deleteAdminSessions(keyID: principal.keyID, keeping: hash) }
        logger?.log(.warning, "console sessions ended", ["actor": .string(principal.actor), "sessions": .int(ended)])
        return ended
    }

    /// Ends a session server-side (sign-out): the cookie's value is dead from now on.
    package func signOut(_ secret: String) throws(ServiceError) {
        _ = try stored { () throws(StorageError) in try store.deleteAdminSession(hash: Digest.sha256(Array(secret.utf8))) }
    }

    /// The CSRF token of a session: derived from the session's secret, which only the browser
    /// holds (in an HttpOnly cookie), so a page of another origin can neither read nor compute it.
    /// The console reads it from `GET /console/session` and sends it as `X-CSRF-Token`.
    package static func csrfToken(session secret: String) -> String {
        Base64Text.encode(Digest.sha256(Array("attestd-console-csrf\u{0}\(secret)".utf8)), .url)
    }

    /// Whether `presented` is the session's CSRF token (compared in constant time).
    package static func acceptsCSRF(_ presented: String, session secret: String) -> Bool {
        ConstantTime.equals(Array(presented.utf8), Array(csrfToken(session: secret).utf8))
    }
}
