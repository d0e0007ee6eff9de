/// The store's operations, sized to the callers that use them: each consumer takes the role it
/// needs (`ChallengeLedger` a `ChallengeStore`, `IntegrationAdmin` an `AdminStore`, the receipt
/// refresher a `ReceiptStore`), and a test double implements only that. Every method is one
/// transaction; its atomicity is part of the contract the suite in
/// `Tests/AttestStorageTests/TokenStoreContractTests.swift` checks against both backends.

/// The one-time challenges (`ChallengeLedger`).
package protocol ChallengeStore: Sendable {
    /// Stores a new challenge when the integration `clientID` is active (not revoked, not
    /// suspended); false, storing nothing, when it is not or does not exist. One statement, so
    /// that a challenge costs one round trip to a database server.
    func insertChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool
    /// Stores a challenge, replacing any earlier one with the same ID (test-mode seeding only,
    /// where recorded devices reuse fixed client data); false, as `insertChallenge`, when the
    /// integration is not active.
    func replaceChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool
    /// The challenge with this ID, without consuming it.
    func challenge(id: [UInt8]) throws(StorageError) -> ChallengeState?
    /// Marks the challenge consumed (compare-and-set); true when this call consumed it, false
    /// when it was consumed already or does not exist.
    func consumeChallenge(id: [UInt8], at time: Int64) throws(StorageError) -> Bool
}

/// Attestation and refresh: the integration to check, devices to register and advance, and the
/// rate buckets every node shares.
package protocol DeviceStore: Sendable {
    /// The integration with this client ID.
    func integration(clientID: String) throws(StorageError) -> IntegrationRecord?
    /// In one transaction: consumes the challenge (compare-and-set: unconsumed), re-checks the
    /// integration, its cap of new keys when given (counted inside the transaction, registrations
    /// of the integration serialised), and the key ID, and registers the device with its first
    /// token. The consumption is committed whatever the outcome, except `challengeUsed`.
    func registerDevice(
        _ device: DeviceRecord, firstToken: TokenRecord, consumingChallenge challengeID: [UInt8], at time: Int64, newKeyCap: NewKeyCap?
    ) throws(StorageError) -> RegistrationOutcome
    /// The device with this key ID.
    func device(keyID: [UInt8]) throws(StorageError) -> DeviceRecord?
    /// What a refresh reads before it verifies: what `integration(clientID:)`, `challenge(id:)`
    /// and `device(keyID:)` answer, read together (PostgreSQL: one round trip instead of three).
    func refreshInputs(clientID: String, challengeID: [UInt8], keyID: [UInt8]) throws(StorageError) -> RefreshInputs
    /// In one transaction: consumes the challenge (compare-and-set), re-checks the integration's
    /// and the device's status, compare-and-sets the counter from `previous` to `counter`, and
    /// stores `token`; with `keepingLatest` N, deletes the device's older tokens beyond the newest
    /// N. The consumption is committed whatever the outcome, except `challengeUsed`.
    func advanceCounter(
        keyID: [UInt8], from previous: UInt32, to counter: UInt32, at time: Int64, token: TokenRecord,
        consumingChallenge challengeID: [UInt8], keepingLatest: Int?
    ) throws(StorageError) -> CounterAdvance
    /// Keys the integration registered at or after `since`.
    func newKeyCount(clientID: String, since: Int64) throws(StorageError) -> Int
    /// Takes one token from the bucket every node shares under `bucket` (refilled at `perSecond`
    /// up to `burst`, in one transaction): nil when taken, or the seconds to wait.
    func takeSharedToken(bucket: String, perSecond: Double, burst: Double, at now: Double) throws(StorageError) -> Int?
}

/// The gateway's checks and RFC 7009 revocation.
package protocol TokenLookupStore: Sendable {
    /// The unexpired token with this hash whose integration is active (not revoked, not suspended)
    /// and whose device is not blocked.
    func activeToken(hash: [UInt8], at time: Int64) throws(StorageError) -> TokenRecord?
    /// `activeToken(hash:at:)` answered through `reply`, exactly once: at once, or later from
    /// another thread while the caller goes on (a store whose lookup is a round trip).
    func activeToken(hash: [UInt8], at time: Int64, then reply: @escaping @Sendable (Result<TokenRecord?, StorageError>) -> Void)
    /// Deletes the token with this hash, and writes `audit`'s row in the same transaction; true
    /// when one was deleted.
    func revokeToken(hash: [UInt8], audit: AuditNote<Bool>?) throws(StorageError) -> Bool
}

/// Administration (attestctl, the admin API): every change writes its audit row in its own
/// transaction, so a change is never without its row, nor a row without its change.
package protocol AdminStore: Sendable {
    /// Inserts a new integration; `constraint` if the client ID exists.
    func insertIntegration(_ integration: IntegrationRecord, audit: AuditNote<Void>?) throws(StorageError)
    /// The integration with this client ID.
    func integration(clientID: String) throws(StorageError) -> IntegrationRecord?
    /// All integrations, oldest first.
    func integrations() throws(StorageError) -> [IntegrationRecord]
    /// Revokes permanently: status, all outstanding tokens deleted, all devices blocked, in one
    /// transaction. Nil when no such integration exists. Idempotent.
    func revokeIntegration(clientID: String, at time: Int64, audit: AuditNote<RevocationSummary>?) throws(StorageError)
        -> RevocationSummary?
    /// Suspends (`at` a time) or resumes (`at` nil) an integration: nil when it does not exist,
    /// false when it is revoked (revocation is final and suspension means nothing then).
    func setSuspended(clientID: String, at time: Int64?, audit: AuditNote<Bool>?) throws(StorageError) -> Bool?
    /// Replaces an integration's receipt and risk policy (and its live-token limit); nil when unknown.
    func updatePolicy(
        clientID: String, policy: IntegrationPolicy, maxLiveTokensPerDevice: Int?, audit: AuditNote<Void>?
    ) throws(StorageError) -> Bool?
    /// Deletes the token with this hash; true when one was deleted.
    func revokeToken(hash: [UInt8], audit: AuditNote<Bool>?) throws(StorageError) -> Bool
    /// Blocks one device key: its tokens stop working at once (they are deleted) and it can never
    /// refresh or attest again. Nil when no such key; otherwise how many tokens went.
    func blockDevice(keyID: [UInt8], at time: Int64, audit: AuditNote<Int>?) throws(StorageError) -> Int?
    /// Makes a blocked key of an active integration active again (its tokens stay deleted: it
    /// refreshes by assertion), audited in the same transaction; never a revoked integration's.
    func unblockDevice(keyID: [UInt8], at time: Int64, audit: AuditNote<Void>?) throws(StorageError) -> DeviceUnblock
    /// The device with this key ID.
    func device(keyID: [UInt8]) throws(StorageError) -> DeviceRecord?
    /// One page of the integration's devices, newest first, with how many unexpired tokens each
    /// holds (never their receipts).
    func devicePage(clientID: String, query: DeviceQuery, at time: Int64) throws(StorageError) -> DevicePage
    /// Unexpired tokens of one key.
    func liveTokenCount(keyID: [UInt8], at time: Int64) throws(StorageError) -> Int
    /// The key's unexpired tokens, newest first, at most `limit` (an integration's cap, or 100).
    func liveTokens(keyID: [UInt8], at time: Int64, limit: Int) throws(StorageError) -> [TokenRecord]
    /// Stores the integration's sealed DeviceCheck key; nil when the integration is unknown.
    func setFraudKey(
        clientID: String, keyID: String, sealedKey: [UInt8], at time: Int64, audit: AuditNote<Void>?
    ) throws(StorageError) -> Bool?
    /// The integration's DeviceCheck key ID and sealed key.
    func fraudKey(clientID: String) throws(StorageError) -> (keyID: String, sealedKey: [UInt8])?
    /// A consistent copy of the whole database in a new SQLite file (see `StoreMaintenance.backup`).
    func backup(to path: String) throws(StorageError)
    /// One page of the audit log, newest first: every row when `query.workspaceID` is nil (the
    /// operator), else the workspace's (see `AdminKeyStore`).
    func auditPage(_ query: AuditQuery) throws(StorageError) -> AuditPage
}

/// The workspace admins' keys and console sessions, and the workspace-scoped reads of the admin
/// API. Lookups read the database on every call (nothing is cached), so a revoked key is refused
/// from the next request on.
package protocol AdminKeyStore: Sendable {
    /// Inserts a new key; `constraint` if its ID or hash exists.
    func insertAdminKey(_ key: AdminKeyRecord, audit: AuditNote<Void>?) throws(StorageError)
    /// The key with this public ID (revoked ones too).
    func adminKey(id: String) throws(StorageError) -> AdminKeyRecord?
    /// The key whose secret has this SHA-256, unless it is revoked, disabled or expired at `time`.
    func activeAdminKey(hash: [UInt8], at time: Int64) throws(StorageError) -> AdminKeyRecord?
    /// The keys of one workspace, or of all (nil), oldest first.
    func adminKeys(workspaceID: String?) throws(StorageError) -> [AdminKeyRecord]
    /// Revokes a key and ends its sessions in one transaction: nil when unknown, false when it was
    /// revoked already.
    func revokeAdminKey(id: String, at time: Int64, audit: AuditNote<Bool>?) throws(StorageError) -> Bool?
    /// Disables a key at `time` and ends its sessions, or enables it again (`time` nil), in one
    /// transaction with its audit row: nil when unknown, false when there was nothing to change
    /// (already so, or revoked).
    func disableAdminKey(id: String, at time: Int64?, audit: AuditNote<Bool>?) throws(StorageError) -> Bool?
    /// Records a use of the key at `time`, unless one was recorded in the minute before.
    func noteAdminKeyUse(id: String, at time: Int64) throws(StorageError)
    /// Stores the workspace's offer of its ownership, replacing an open one, with its audit row.
    func offerOwnership(_ offer: OwnershipOffer, audit: AuditNote<Void>?) throws(StorageError)
    /// The workspace's offer, expired or not; nil when none.
    func ownershipOffer(workspaceID: String) throws(StorageError) -> OwnershipOffer?
    /// Withdraws the workspace's offer (with its audit row when there was one); false when none.
    func withdrawOwnershipOffer(workspaceID: String, audit: AuditNote<Bool>?) throws(StorageError) -> Bool
    /// Accepts the workspace's offer to `keyID` at `time`, in one transaction: only while it is
    /// unexpired, its giver is the live primary owner and the taker is usable (neither revoked,
    /// disabled nor expired); the giver becomes `owner`, the taker `primary_owner`, the offer goes,
    /// the audit row is written. False (nothing changed) otherwise.
    func acceptOwnership(workspaceID: String, keyID: String, at time: Int64, audit: AuditNote<Void>?) throws(StorageError) -> Bool
    /// Stores a new console session (and the sign-in's audit row), and ends the key's oldest
    /// sessions beyond `keepingLatest` (the new one counted); how many it ended.
    @discardableResult
    func insertAdminSession(_ session: AdminSessionRecord, keepingLatest: Int, audit: AuditNote<Int>?) throws(StorageError) -> Int
    /// The session with this hash and its key, while the session is unexpired at `time` and the
    /// key is neither revoked, disabled nor expired.
    func liveAdminSession(hash: [UInt8], at time: Int64) throws(StorageError) -> LiveAdminSession?
    /// Moves a live session's expiry to `expiresAt` (its idle timeout, renewed by use).
    func extendAdminSession(hash: [UInt8], to expiresAt: Int64) throws(StorageError)
    /// The key's sessions unexpired at `time`, newest first.
    func adminSessions(keyID: String, at time: Int64) throws(StorageError) -> [AdminSessionRecord]
    /// Ends every session of the key but the one with hash `keeping`; how many it ended.
    func deleteAdminSessions(keyID: String, keeping: [UInt8]) throws(StorageError) -> Int
    /// Ends a session (sign-out); true when it existed.
    func deleteAdminSession(hash: [UInt8]) throws(StorageError) -> Bool
    /// One workspace's integrations, oldest first.
    func integrations(workspaceID: String) throws(StorageError) -> [IntegrationRecord]
    /// Devices and live tokens of each of the workspace's integrations that has any, by client ID.
    func integrationCounts(workspaceID: String, at time: Int64) throws(StorageError) -> [String: IntegrationCounts]
    /// The token with this hash, live or not, whatever its integration's state.
    func token(hash: [UInt8]) throws(StorageError) -> TokenRecord?
}

/// The receipt refresher's work.
package protocol ReceiptStore: Sendable {
    /// Active devices of active integrations with a DeviceCheck key whose receipt verified and is
    /// bound to their credential certificate, last refreshed (or, never refreshed, created) at or
    /// before `dueBefore`, oldest first.
    func receiptRefreshCandidates(dueBefore: Int64, limit: Int) throws(StorageError) -> [DeviceRecord]
    /// The integration with this client ID.
    func integration(clientID: String) throws(StorageError) -> IntegrationRecord?
    /// The integration's DeviceCheck key ID and sealed key.
    func fraudKey(clientID: String) throws(StorageError) -> (keyID: String, sealedKey: [UInt8])?
    /// Stores a device's new receipt (from Apple) and what it says.
    func updateReceipt(keyID: [UInt8], receipt: [UInt8], state: ReceiptState) throws(StorageError)
    /// Records an exchange with Apple that confirmed the receipt (304) at `time`.
    func touchReceipt(keyID: [UInt8], at time: Int64) throws(StorageError)
}

/// Upkeep and operators' tools: the purge, the gauges, readiness, integrity, copies.
package protocol StoreMaintenance: Sendable {
    /// Deletes expired tokens and challenges that expired before `time`; returns how many rows went.
    func purgeExpired(at time: Int64) throws(StorageError) -> Int
    /// Counts and size for the metrics gauges.
    func statistics() throws(StorageError) -> StoreStatistics
    /// Reads every integration, device, token unexpired at `time` and audit entry, consistently (one transaction).
    func snapshot(at time: Int64) throws(StorageError) -> StoreSnapshot
    /// Writes a consistent copy of the whole database, taken online, to a new SQLite file at `path`
    /// (which must not exist, or be empty): SQLite's `VACUUM INTO`; for PostgreSQL a snapshot
    /// written into a new SQLite database (`attestctl store copy` restores it into any store).
    func backup(to path: String) throws(StorageError)
    /// Writes `snapshot` into this store in one transaction; `notEmpty` (and nothing written)
    /// when the store holds any integration already.
    func restore(_ snapshot: StoreSnapshot) throws(StorageError)
    /// Called once at a clean stop, after the last request: SQLite folds its write-ahead log into
    /// the database file (and empties the log), so that a stopped database is one complete file;
    /// PostgreSQL closes its connections.
    func close() throws(StorageError)
    /// Reads the whole database for damage (`attestctl check`): SQLite's quick_check; PostgreSQL
    /// checks its own pages, so there it only confirms the server answers.
    func checkIntegrity() throws(StorageError)
    /// Throws when the storage cannot serve requests now (`/readyz`): a PostgreSQL server that
    /// does not answer, a SQLite file that cannot be read.
    func checkAvailable() throws(StorageError)
    /// The connection pool's state now; nil for a store without one (SQLite).
    var poolStatistics: PoolStatistics? { get }
    /// The database server's clock, Unix seconds, when the store is shared by several nodes
    /// (PostgreSQL); nil for a store only this node uses (SQLite), whose clock is the node's.
    func databaseTime() throws(StorageError) -> Double?
    /// What a store only this node uses (SQLite) recorded of time, for a purge on a clock that may
    /// have stepped ahead (`PurgeHorizon`); nil for a store with a clock of its own (PostgreSQL).
    func recordedTime() throws(StorageError) -> RecordedTime?
}

/// The newest time a store recorded.
package struct RecordedTime: Sendable, Equatable {
    /// Unix seconds: when the newest token was issued (nil: no token).
    package var newestIssue: Int64?

    package init(newestIssue: Int64?) { self.newestIssue = newestIssue }
}

/// Each integration's verifications per hour: what the console charts.
package protocol VerificationCountStore: Sendable {
    /// Adds each count to its row (integration, hour, kind, outcome), creating it if absent.
    func addVerificationCounts(_ counts: [VerificationCount]) throws(StorageError)
    /// One integration's counts from `since` on, summed into `bucket`-second buckets (3600 or
    /// 86400, aligned to Unix time), oldest first.
    func verificationCounts(clientID: String, since: Int64, bucket: Int64) throws(StorageError) -> [VerificationCount]
}

/// Everything attestd persists: every role, implemented by both backends.
package protocol TokenStore: ChallengeStore, DeviceStore, TokenLookupStore, AdminStore, AdminKeyStore, DebugTokenStore, ReceiptStore,
    VerificationCountStore, StoreMaintenance
{}

extension TokenLookupStore {
    /// Answered at once, for a store where a lookup costs no round trip (SQLite).
    package func activeToken(
        hash: [UInt8], at time: Int64, then reply: @escaping @Sendable (Result<TokenRecord?, StorageError>) -> Void
    ) {
        do throws(StorageError) {
            reply(.success(try activeToken(hash: hash, at: time)))
        } catch {
            reply(.failure(error))
        }
    }
}

extension DeviceStore {
    /// `registerDevice` without a cap of new keys.
    package func registerDevice(
        _ device: DeviceRecord, firstToken: TokenRecord, consumingChallenge challengeID: [UInt8], at time: Int64
    ) throws(StorageError) -> RegistrationOutcome {
        try registerDevice(device, firstToken: firstToken, consumingChallenge: challengeID, at: time, newKeyCap: nil)
    }
}

extension DeviceStore where Self: ChallengeStore {
    /// Three reads, for a store where a read costs no round trip (SQLite).
    package func refreshInputs(clientID: String, challengeID: [UInt8], keyID: [UInt8]) throws(StorageError) -> RefreshInputs {
        RefreshInputs(
            integration: try integration(clientID: clientID), challenge: try challenge(id: challengeID), device: try device(keyID: keyID))
    }
}

extension AdminKeyStore {
    /// The key of a live session (`liveAdminSession` without the session's times).
    package func adminSessionKey(hash: [UInt8], at time: Int64) throws(StorageError) -> AdminKeyRecord? {
        try liveAdminSession(hash: hash, at: time)?.key
    }
}
