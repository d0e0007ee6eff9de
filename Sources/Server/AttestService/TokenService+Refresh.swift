import AttestCore
import AttestCrypto
import AttestStorage

/// `POST /v1/token`: a new token for a registered key, proved by an assertion.
extension TokenService {
    /// Verifies an assertion by a registered key, advances its counter and mints a token, in
    /// this order: 1. the node's clock agrees with the database's (nothing is spent otherwise);
    /// 2. one read of the integration, the challenge and the device (one round trip); 3. the
    /// integration is active; 4. the challenge is its own and live; 5. the assertion parses;
    /// 6. the key is registered to this integration and not blocked; 7. the device passes the
    /// receipt policy; 8. its trust anchor is still trusted; 9. the assertion verifies
    /// (`AssertionVerifier`) with a counter above the stored one; 10. one transaction advances
    /// the counter from the value read, stores the token, trims the device's live tokens to the
    /// cap and consumes the challenge. Any refusal after 1 spends the challenge.
    package func refresh(_ request: RefreshRequest, from address: String) throws(ServiceError) -> IssuedToken {
        try requireAgreeingClock()
        let now = clock.now()
        return try answering(request.challenge, .assertion, now: now) { found throws(ServiceError) -> IssuedToken in
            let inputs = try stored { () throws(StorageError) in
                try store.refreshInputs(
                    clientID: request.clientID.text, challengeID: request.challenge.storedID, keyID: request.keyID.bytes)
            }
            let integration = try Self.active(inputs.integration)
            found = integration.clientID
            let challengeID = try challenges.usable(request.challenge, stored: inputs.challenge, for: integration, now: now)
            let (device, key) = try registeredKey(request, device: inputs.device, integration: integration, now: now)
            let counter = try verify(request, key: key, device: device, integration: integration)
            let (token, record) = try mint(for: integration, keyID: request.keyID, now: now)
            let outcome = try stored { () throws(StorageError) in
                try store.advanceCounter(
                    keyID: device.keyID, from: device.counter, to: counter, at: now, token: record, consumingChallenge: challengeID,
                    keepingLatest: integration.maxLiveTokensPerDevice)
            }
            switch outcome {
            case .advanced: return token
            case .challengeUsed: throw ServiceError.challengeUsed
            case .counterChanged:
                throw ServiceError(.assertionRejected, .check(.counterNotIncreasing), "another request used this counter first")
            case .integrationRevoked: throw ServiceError.integrationRevoked
            case .integrationSuspended: throw ServiceError.integrationSuspended
            case .deviceBlocked: throw ServiceError.deviceBlocked
            }
        }
    }

    /// An unknown key and a key of another integration get the same answer as a bad signature:
    /// the answer is no oracle for registered keys.
    private static let unknownKey = ServiceError(.assertionRejected, .check(.signature), "the assertion does not verify")

    /// Steps 5 to 8: the device and its public key, when the request may be verified against them.
    private func registeredKey(
        _ request: RefreshRequest, device: DeviceRecord?, integration: IntegrationRecord, now: Int64
    ) throws(ServiceError) -> (DeviceRecord, PublicKey) {
        // Parsed before the device is looked at: a malformed assertion gets the same answer
        // whether or not its key is registered.
        do throws(AttestError) {
            _ = try AssertionVerifier.parse(request.object)
        } catch {
            throw ServiceError.rejected(error, attestation: false)
        }
        guard let device, device.clientID == integration.clientID else { throw Self.unknownKey }
        guard device.status == .active else { throw ServiceError.deviceBlocked }
        try Self.checkReceiptPolicy(integration.policy, device: device, now: now, grace: policy.riskMetricGraceSeconds)
        // A key attested while a test root was trusted must not refresh under Apple's root (or
        // the other way round): the anchor is part of what its attestation proved. A key
        // attested under Apple's current root keeps refreshing while a next root is added.
        guard anchorFingerprints.contains(device.trustAnchor) else {
            throw ServiceError(.assertionRejected, .check(.trustAnchor), "this key was attested under another trust anchor")
        }
        guard let key = keys.key(for: device) else { throw Self.unknownKey }
        return (device, key)
    }

    /// Step 9: the assertion's counter, once it verifies against the key and the App ID the key attested as.
    private func verify(
        _ request: RefreshRequest, key: PublicKey, device: DeviceRecord, integration: IntegrationRecord
    ) throws(ServiceError) -> UInt32 {
        // An assertion proves the App ID its key attested as, not any of the integration's.
        let appIDs = try Self.appIDs(integration).filter { device.appID == nil || $0.description == device.appID }
        do throws(AttestError) {
            return try AssertionVerifier.verify(
                AssertionInput(
                    object: request.object, clientDataHash: Digest.sha256(request.challenge.bytes), publicKey: key, appIDs: appIDs,
                    previousCounter: device.counter)
            ).counter
        } catch  where error.code == .signature {
            throw Self.unknownKey  // byte-identical to the unknown-key answer
        } catch {
            throw ServiceError.rejected(error, attestation: false)
        }
    }
}
