import AttestCore
import AttestCrypto
import AttestStorage

/// `POST /v1/attest`: verify an attestation, register its key, mint the first token.
extension TokenService {
    /// Verifies an attestation, registers the key and mints its first token, in this order:
    /// 1. the node's clock agrees with the database's (nothing is spent otherwise);
    /// 2. the integration is active; 3. the client address has attempts left; 4. the challenge
    /// is this integration's and live; 5. the integration's new-key cap has room; 6. the
    /// attestation verifies (`AttestationVerifier`); 7. its receipt passes the integration's
    /// policy; 8. the integration's shared attest bucket has a token; 9. one transaction
    /// registers the key, stores the token and consumes the challenge.
    ///
    /// The attest bucket (8) is charged only for an attestation that verified, so junk from
    /// anyone who knows a client ID cannot drain the budget genuine devices need
    /// (docs/decisions/0009-charge-after-verification.md); the work before it is bounded by the
    /// challenge (limited when issued) and the per-address limit. Any refusal after 1 spends
    /// the challenge.
    package func attest(_ request: AttestRequest, from address: String) throws(ServiceError) -> IssuedToken {
        try requireAgreeingClock()
        let now = clock.now()
        return try answering(request.challenge, .attestation, now: now) { found throws(ServiceError) -> IssuedToken in
            let integration = try activeIntegration(request.clientID)
            found = integration.clientID
            try limit(.address(address), policy.perAddress, now: now)
            let challengeID = try challenges.usable(request.challenge, for: integration, now: now)
            try requireNewKeyRoom(integration, now: now)
            let verified = try verify(request, integration: integration, now: now)
            let receipt = try receiptState(of: verified, integration: integration, now: now)
            // By the clock of now, not the request's: the bucket refills by the time between takes.
            try sharedLimit(.attestations(clientID: integration.clientID), policy.attestPerIntegration, now: clock.now())
            return try register(
                verified, receipt: receipt, keyID: request.keyID, integration: integration, challengeID: challengeID, now: now)
        }
    }

    /// Runs a device request's checks and write with the challenge rule (a refusal spends it) and
    /// reports the outcome once: `found` is the integration's stored client ID once known.
    func answering(
        _ challenge: Challenge, _ kind: VerificationKind, now: Int64, _ body: (inout String?) throws(ServiceError) -> IssuedToken
    ) throws(ServiceError) -> IssuedToken {
        var found: String?
        do throws(ServiceError) {
            let token = try challenges.spendingOnFailure(challenge, now: now) { () throws(ServiceError) in try body(&found) }
            observer?.verificationFinished(kind, outcome: "ok", clientID: found)
            observer?.tokenIssued(debug: false)
            return token
        } catch {
            report(kind, error, clientID: found)
            throw error
        }
    }

    /// Reports a refused verification to the observer: overall, and per integration when
    /// `clientID` (the stored one) is known.
    func report(_ kind: VerificationKind, _ error: ServiceError, clientID: String?) {
        switch (error.code, error.subcode) {
        case (.attestationRejected, _), (.assertionRejected, _), (.malformedRequest, .check):
            observer?.verificationFinished(kind, outcome: error.subcode.identifier, clientID: clientID)
        case (.malformedRequest, _):
            observer?.verificationFinished(kind, outcome: error.subcode.identifier, clientID: nil)
        default:
            break
        }
    }

    /// Refuses a new key past the integration's cap of the last hour. The count before
    /// verification only saves the work: the registering transaction counts again (`NewKeyCap`).
    private func requireNewKeyRoom(_ integration: IntegrationRecord, now: Int64) throws(ServiceError) {
        guard let maximum = integration.policy.maxNewKeysPerHour else { return }
        let recent = try stored { () throws(StorageError) in try store.newKeyCount(clientID: integration.clientID, since: now - 3600) }
        guard recent < maximum else { throw Self.newKeyCapReached(maximum) }
    }

    private static func newKeyCapReached(_ maximum: Int) -> ServiceError {
        ServiceError(.rateLimited, .newKeysPerHour, "the integration registered its \(maximum) new keys of the last hour", retryAfter: 60)
    }

    private func verify(_ request: AttestRequest, integration: IntegrationRecord, now: Int64) throws(ServiceError) -> VerifiedAttestation {
        let input = AttestationInput(
            object: request.object, keyID: request.keyID.bytes, clientDataHash: Digest.sha256(request.challenge.bytes),
            appIDs: try Self.appIDs(integration), allowedEnvironments: Set(integration.environments), time: now)
        do throws(AttestError) {
            return try verifier.verify(input)
        } catch {
            throw ServiceError.rejected(error, attestation: true)
        }
    }

    /// Stores the verified key and its first token, consuming the challenge in the same
    /// transaction; the new-key cap counted again there, serialised per integration, settles two
    /// registrations that raced past the first count.
    private func register(
        _ verified: VerifiedAttestation, receipt: ReceiptState?, keyID: KeyID, integration: IntegrationRecord, challengeID: [UInt8],
        now: Int64
    ) throws(ServiceError) -> IssuedToken {
        let (token, record) = try mint(for: integration, keyID: keyID, now: now)
        let device = DeviceRecord(
            keyID: keyID.bytes, clientID: integration.clientID, publicKey: verified.publicKey, counter: 0,
            environment: verified.environment, receipt: verified.receipt, status: .active, createdAt: now, updatedAt: now,
            trustAnchor: Hex.encode(verified.anchorFingerprint), appID: verified.appID.description, receiptState: receipt,
            credentialSHA256: Digest.sha256(verified.credentialCertificate))
        let cap = integration.policy.maxNewKeysPerHour.map { NewKeyCap(maximum: $0, since: now - 3600) }
        let outcome = try stored { () throws(StorageError) in
            try store.registerDevice(device, firstToken: record, consumingChallenge: challengeID, at: now, newKeyCap: cap)
        }
        switch outcome {
        case .registered: return token
        case .newKeyCapReached: throw Self.newKeyCapReached(cap?.maximum ?? 0)
        case .challengeUsed: throw ServiceError.challengeUsed
        case .integrationRevoked: throw ServiceError.integrationRevoked
        case .integrationSuspended: throw ServiceError.integrationSuspended
        case .keyExists(.active): throw ServiceError.keyAlreadyRegistered
        case .keyExists(.revoked): throw ServiceError.deviceBlocked
        }
    }
}
