import AttestCrypto
import AttestStorage

/// The one-time challenge rules, in one place.
///
/// A challenge is spent on its first presentation, whatever the outcome: a request that
/// succeeds consumes it in the same transaction that stores its result (one durable commit per
/// request); a request that fails for any reason consumes it before the error is returned
/// (`spendingOnFailure`). The only presentations that spend nothing are those of a challenge
/// that is unknown or spent already (there is nothing left to spend) and a malformed challenge
/// field (there is no challenge).
struct ChallengeLedger: Sendable {
    let store: any ChallengeStore
    /// Seconds a challenge stays usable.
    let lifetime: Int64

    /// Stores and returns a fresh challenge for `clientID`; nil, storing nothing, when that
    /// integration is not active (the store checks in the statement that inserts).
    func issue(for clientID: String, random: any RandomSource, now: Int64) throws(ServiceError) -> IssuedChallenge? {
        let bytes = try random.bytesOrFail(Challenge.issuedLength)
        guard let challenge = Challenge(bytes) else { throw ServiceError.randomFailed }
        let inserted = try stored { () throws(StorageError) in
            try store.insertChallenge(id: challenge.storedID, clientID: clientID, createdAt: now, expiresAt: now + lifetime)
        }
        return inserted ? IssuedChallenge(challenge: Base64Text.encode(bytes, .url), expiresIn: lifetime) : nil
    }

    /// TEST MODE ONLY: stores `challenge` as issued (replacing an earlier one), so that objects
    /// recorded from real devices, whose client data are fixed, can be replayed. False when the
    /// integration is not active.
    func seed(_ challenge: Challenge, for clientID: String, now: Int64) throws(ServiceError) -> Bool {
        try stored { () throws(StorageError) in
            try store.replaceChallenge(id: challenge.storedID, clientID: clientID, createdAt: now, expiresAt: now + lifetime)
        }
    }

    /// The stored ID of `challenge` when `integration` may use it now.
    ///
    /// Unknown or spent: thrown as is. Issued to another integration, or expired: spent, then
    /// thrown. Otherwise it is left unconsumed for the caller's success transaction to consume.
    func usable(_ challenge: Challenge, for integration: IntegrationRecord, now: Int64) throws(ServiceError) -> [UInt8] {
        let state = try stored { () throws(StorageError) in try store.challenge(id: challenge.storedID) }
        return try usable(challenge, stored: state, for: integration, now: now)
    }

    /// `usable` on the challenge's row as the caller read it (`stored`: nil when there is none).
    func usable(
        _ challenge: Challenge, stored state: ChallengeState?, for integration: IntegrationRecord, now: Int64
    ) throws(ServiceError) -> [UInt8] {
        let id = challenge.storedID
        guard let state else { throw ServiceError.challengeUnknown }
        guard !state.consumed else { throw ServiceError.challengeUsed }
        if state.clientID != integration.clientID {
            try consume(id, now: now)
            throw ServiceError.challengeWrongIntegration
        }
        if state.expiresAt <= now {
            try consume(id, now: now)
            throw ServiceError.challengeExpired
        }
        return id
    }

    /// Runs `body`; if it fails, spends `challenge` before rethrowing (nothing to do when the
    /// failure was that the challenge is unknown or spent).
    func spendingOnFailure<T>(_ challenge: Challenge, now: Int64, _ body: () throws(ServiceError) -> T) throws(ServiceError) -> T {
        do {
            return try body()
        } catch {
            if error != ServiceError.challengeUsed && error != ServiceError.challengeUnknown { try spend(challenge, now: now) }
            throw error
        }
    }

    /// Spends `challenge` if it exists unspent. Read first, so that junk challenges (the common
    /// case of a hostile flood) cost a read, not a write transaction.
    func spend(_ challenge: Challenge, now: Int64) throws(ServiceError) {
        let id = challenge.storedID
        guard let state = try stored({ () throws(StorageError) in try store.challenge(id: id) }), !state.consumed else { return }
        try consume(id, now: now)
    }

    private func consume(_ id: [UInt8], now: Int64) throws(ServiceError) {
        _ = try stored { () throws(StorageError) in try store.consumeChallenge(id: id, at: now) }
    }
}
