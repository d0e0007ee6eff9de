import Foundation

/// What this process knows of the App Attest key.
enum KeyState: Sendable, Equatable {
    /// The key store has not been read yet.
    case unloaded
    /// No key: the next step makes one.
    case absent
    /// Read from the key store at launch: presumed registered, so refreshed by assertion (a key
    /// the device never attested, left by a crash after it was saved, is attested then).
    case saved(String)
    /// Made in this process and not yet attested by the device.
    case fresh(String)
    /// Attested by the device and sent to attestd, whose answer was lost: attestd may have
    /// registered it.
    case sent(String)
    /// Attested by the device, and refused by attestd before registration.
    case refused(String)
    /// Registered with attestd: refreshed by assertion.
    case registered(String)

    /// The key ID, in any state that has one.
    var keyID: String? {
        switch self {
        case .unloaded, .absent: nil
        case .saved(let id), .fresh(let id), .sent(let id), .refused(let id), .registered(let id): id
        }
    }
}

/// What one `token()` call may still spend on recovery.
struct Allowance {
    /// Keys discarded and replaced ("once per call": a key attestd no longer knows, or one the
    /// device calls invalid).
    var newKeys = 1
    /// Extra tries with a new challenge after 401 `invalid_challenge`.
    var newChallenges = 1
    /// Extra assertions after 401 `counter_not_increasing` (another process's assertion won).
    var counterRaces = 3
    /// A bound on the steps of one try, so no sequence of answers can loop.
    var steps = 12
}

/// A challenge from attestd, its client data hash, and until when (monotonic) it may be presented.
struct IssuedChallenge: Sendable {
    let data: ClientData
    let hash: Data
    let usableUntil: TimeInterval
}

extension AttestClient {
    /// A new token: attestation or refresh, retried within `retryBudget` as `RetrySchedule` says.
    func obtain(retryBudget: TimeInterval) async throws -> AccessToken {
        // The whole call, requests included, ends by the budget plus one request's timeout.
        let deadline = clock.now() + retryBudget + configuration.requestTimeout
        return try await ServiceConnection.$callDeadline.withValue(deadline) {
            try await obtainWithin(retryBudget: retryBudget)
        }
    }

    private func obtainWithin(retryBudget: TimeInterval) async throws -> AccessToken {
        if let debugToken { return try await exchange(debugToken, retryBudget: retryBudget) }
        guard device.isSupported else { throw AttestClientError.unsupportedDevice }
        var allowance = Allowance()
        var schedule = RetrySchedule(budget: retryBudget, clock: clock)
        while true {
            do {
                // One client of the stored key at a time, each starting from what the store holds
                // now: another may have made, replaced or reset the key meanwhile.
                let turn = try await KeyTurn.acquire(keyStore.coordination, deadline: ServiceConnection.callDeadline, clock: clock)
                defer { turn.release() }
                try adoptStoredKey()
                return try await attempt(&allowance)
            } catch let failure as RetryableFailure {
                guard let pause = schedule.pause(retryAfter: failure.retryAfter) else { throw failure.final }
                try await clock.sleep(pause)
            }
        }
    }

    /// A token for a debug token (`POST /v1/debug-token`), retried within `retryBudget` as the
    /// attested path is; a refusal (401 `invalid_debug_token` among them) is not retried.
    private func exchange(_ debugToken: String, retryBudget: TimeInterval) async throws -> AccessToken {
        var schedule = RetrySchedule(budget: retryBudget, clock: clock)
        while true {
            do {
                try Task.checkCancellation()
                do {
                    return accessToken(try await serviceCall { try await service.exchange(debugToken: debugToken) })
                } catch let refusal as Refusal {
                    throw mapped(refusal)
                }
            } catch let failure as RetryableFailure {
                guard let pause = schedule.pause(retryAfter: failure.retryAfter) else { throw failure.final }
                try await clock.sleep(pause)
            }
        }
    }

    /// Takes the key the store holds when it is not the one this client knows (another client
    /// of the store made, replaced or reset it): that one is refreshed by assertion, or attested
    /// when the other left it unattested.
    func adoptStoredKey() throws {
        guard key != .unloaded else { return }
        let stored = try keyStore.load()
        guard stored != key.keyID else { return }
        key = stored.map(KeyState.saved) ?? .absent
        unspentChallenge = nil
    }

    /// One try: the steps from the key's state to a token, each step moving the state on.
    private func attempt(_ allowance: inout Allowance) async throws -> AccessToken {
        while allowance.steps > 0 {
            allowance.steps -= 1
            try Task.checkCancellation()
            switch key {
            case .unloaded:
                key = try keyStore.load().map(KeyState.saved) ?? .absent
            case .absent:
                // The challenge first: a client ID attestd refuses (unknown, revoked) makes no key.
                unspentChallenge = try await nextChallenge()
                let keyID = try await deviceCall { try await device.generateKey() }
                // Saved before it is attested, so a crash in between leaves a key to attest at the
                // next launch instead of one forgotten (and never registered).
                try keyStore.save(keyID)
                key = .fresh(keyID)
            case .fresh(let keyID), .sent(let keyID), .refused(let keyID):
                if let token = try await attest(keyID, &allowance) { return token }
            case .saved(let keyID), .registered(let keyID):
                if let token = try await refresh(keyID, &allowance) { return token }
            }
        }
        throw AttestClientError.transport("App Attest did not settle within one call")
    }

    /// A challenge, the device's attestation of `keyID`, `/v1/attest`. Nil when the state moved on
    /// without a token (the key is registered after all, or was replaced).
    private func attest(_ keyID: String, _ allowance: inout Allowance) async throws -> AccessToken? {
        let challenge = try await nextChallenge()
        // Apple attests a key once: not when too little of the call is left to send the attestation.
        if let deadline = ServiceConnection.callDeadline, deadline - clock.now() < 1 {
            throw AttestClientError.transport("too little of this call's retry budget is left to attest a key")
        }
        let attestation: Data
        do {
            attestation = try await deviceCall { try await device.attestKey(keyID, clientDataHash: challenge.hash) }
        } catch AppAttestDeviceError.invalidKey {
            if key == .sent(keyID) {
                // Apple attests a key once: this one was attested and sent, and attestd's answer
                // was lost, so attestd may know it. An assertion settles it.
                key = .registered(keyID)
            } else {
                try replaceKey(&allowance, otherwise: AppAttestDeviceError.invalidKey)
            }
            unspentChallenge = challenge  // not presented: still good for the next step
            return nil
        } catch let failure as RetryableFailure {
            // Apple asks for the retry to use the same client data hash: keep the challenge.
            unspentChallenge = challenge
            throw failure
        }
        key = .sent(keyID)
        let issued: IssuedToken
        do {
            issued = try await serviceCall { try await service.attest(keyID: keyID, attestation: attestation, challenge: challenge.data) }
        } catch let refusal as Refusal {
            if refusal.status == 409, refusal.code == "key_already_registered" {
                // attestd registered the key, and its answer was lost: refresh by assertion.
                key = .registered(keyID)
                return nil
            }
            // attestd's own refusal means it registered nothing; an answer without its problem body
            // came from something in front of it (a 502 or 504), which may have passed the request on.
            key = refusal.code.isEmpty ? .sent(keyID) : .refused(keyID)
            if refusal.status == 401, refusal.code == "invalid_challenge", allowance.newChallenges > 0 {
                allowance.newChallenges -= 1
                return nil
            }
            throw mapped(refusal)
        }
        key = .registered(keyID)
        return accessToken(issued)
    }

    /// A challenge, the device's assertion by `keyID`, `/v1/token`. Nil when the state moved on
    /// without a token (the key needs attesting, or was replaced).
    private func refresh(_ keyID: String, _ allowance: inout Allowance) async throws -> AccessToken? {
        let challenge = try await nextChallenge()
        let assertion: Data
        do {
            assertion = try await deviceCall { try await device.generateAssertion(keyID, clientDataHash: challenge.hash) }
        } catch AppAttestDeviceError.invalidKey {
            if key == .saved(keyID) {
                // A saved key the device has not attested (the app stopped between saving and
                // attesting it): attest it now rather than leak it.
                key = .fresh(keyID)
            } else {
                try replaceKey(&allowance, otherwise: AppAttestDeviceError.invalidKey)
            }
            unspentChallenge = challenge
            return nil
        }
        let issued: IssuedToken
        do {
            issued = try await serviceCall { try await service.refresh(keyID: keyID, assertion: assertion, challenge: challenge.data) }
        } catch let refusal as Refusal {
            if refusal.status == 401, refusal.code == "assertion_rejected", refusal.reason == "counter_not_increasing",
                allowance.counterRaces > 0
            {
                // Another process asserted with the same key and a higher counter first (a shared
                // Keychain item without a lock file): the key is fine, a new assertion is higher.
                allowance.counterRaces -= 1
                return nil
            }
            if refusal.status == 401, refusal.code == "assertion_rejected" {
                // attestd does not know this key (e.g. its database was restored from an old backup)
                // or refuses its assertions: a new key, attested, once per call.
                try replaceKey(&allowance, otherwise: mapped(refusal))
                return nil
            }
            if refusal.status == 401, refusal.code == "invalid_challenge", allowance.newChallenges > 0 {
                allowance.newChallenges -= 1
                return nil
            }
            throw mapped(refusal)
        }
        key = .registered(keyID)
        return accessToken(issued)
    }

    /// Forgets the key so the next step makes and attests a new one; throws `otherwise` when
    /// this call has already replaced one.
    private func replaceKey(_ allowance: inout Allowance, otherwise error: any Error) throws {
        guard allowance.newKeys > 0 else { throw error }
        allowance.newKeys -= 1
        try keyStore.remove()
        key = .absent
    }

    /// The challenge kept from an attestation Apple could not complete while it is still good,
    /// otherwise a new one from attestd.
    private func nextChallenge() async throws -> IssuedChallenge {
        if let kept = unspentChallenge {
            unspentChallenge = nil
            if clock.now() < kept.usableUntil { return kept }
        }
        let (data, lifetime): (ClientData, TimeInterval)
        do {
            (data, lifetime) = try await serviceCall { try await service.challenge() }
        } catch let refusal as Refusal {
            throw mapped(refusal)
        }
        // Kept for at most its lifetime less a minute: a challenge attestd has expired is spent for nothing.
        return IssuedChallenge(data: data, hash: data.hash, usableUntil: clock.now() + lifetime - 60)
    }

    private func accessToken(_ issued: IssuedToken) -> AccessToken {
        AccessToken(value: issued.value, expiresAt: configuration.clock().addingTimeInterval(issued.lifetime))
    }

    /// `body`, a request to attestd, with no answer as a `RetryableFailure`; a `Refusal` is left
    /// for the step to handle (or map).
    private func serviceCall<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let failure as TransportFailure {
            throw RetryableFailure(final: .transport(failure.description), retryAfter: nil)
        }
    }

    /// `body`, an App Attest call, with Apple's outcomes the client reacts to mapped.
    private func deviceCall<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch AppAttestDeviceError.featureUnsupported {
            throw AttestClientError.unsupportedDevice
        } catch AppAttestDeviceError.serverUnavailable {
            throw RetryableFailure(final: .serviceUnavailable(retryAfter: nil), retryAfter: nil)
        }
    }

    /// The error a refusal stands for (docs/API.md); a retryable one as `RetryableFailure`.
    func mapped(_ refusal: Refusal) -> any Error {
        switch (refusal.status, refusal.code) {
        case (403, "integration_revoked"):
            revoked = true
            return AttestClientError.integrationRevoked
        case (403, "integration_suspended"): return AttestClientError.integrationSuspended
        case (403, "device_blocked"): return AttestClientError.deviceBlocked
        case (404, "integration_not_found"): return AttestClientError.integrationNotFound
        case (429, _):
            return RetryableFailure(final: .rateLimited(retryAfter: refusal.retryAfter), retryAfter: refusal.retryAfter)
        case (408, _):
            return RetryableFailure(final: .transport("attestd closed a request it waited too long for (408)"), retryAfter: nil)
        case (500...599, _):
            return RetryableFailure(final: .serviceUnavailable(retryAfter: refusal.retryAfter), retryAfter: refusal.retryAfter)
        default:
            return AttestClientError.rejected(status: refusal.status, code: refusal.code, reason: refusal.reason)
        }
    }
}
