import AttestCore
import AttestCrypto
import AttestService
import AttestStorage
import AttestTesting
import Testing

/// The receipt and risk policies apply at every refresh and fail closed, a device's credential
/// certificate is recorded for its receipts, and the cap of new keys holds under concurrent
/// registrations (decision 0021).
@Suite("Receipt policy at refresh")
struct ReceiptPolicyTests {
    @Test("a valid receipt required after a device attested is required at its next refresh")
    func requireValidReceiptAtRefresh() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var device = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        _ = try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1")
        _ = try world.store.updatePolicy(
            clientID: world.integration.clientID, policy: IntegrationPolicy(requireValidReceipt: true), maxLiveTokensPerDevice: nil,
            audit: nil)
        #expect(
            serviceError { try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1") }
                == ServiceError(.receiptRequired, .receiptRequired, ""))
        let valid = ReceiptState(verdict: .valid, type: .receipt, createdAt: 1, expiresAt: 2, riskMetric: 1, refreshedAt: 1)
        try world.store.updateReceipt(keyID: device.keyID, receipt: [1], state: valid)
        _ = try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1")
    }

    @Test("with a risk limit, a device without a verified metric refreshes during the grace period and is refused after it")
    func unknownMetricFailsClosed() throws {
        var policy = ServicePolicy()
        policy.riskMetricGraceSeconds = 3600
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        var device = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        _ = try world.store.updatePolicy(
            clientID: world.integration.clientID, policy: IntegrationPolicy(maxRiskMetric: 5), maxLiveTokensPerDevice: nil, audit: nil)
        world.clock.advance(3600)
        _ = try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1")
        world.clock.advance(1)
        #expect(
            serviceError { try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1") }
                == ServiceError(.riskMetricExceeded, .riskMetricUnknown, ""))
        let known = ReceiptState(verdict: .valid, type: .receipt, createdAt: 1, expiresAt: 2, riskMetric: 5, refreshedAt: 1)
        try world.store.updateReceipt(keyID: device.keyID, receipt: [1], state: known)
        _ = try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1")
    }

    @Test("attestation records the SHA-256 of the device's credential certificate")
    func credentialRecorded() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let device = try SyntheticDevice()
        let request = try world.attestRequest(device)
        _ = try world.service.attest(request, from: "127.0.0.1")
        let verified = try AttestationVerifier(anchor: world.pki.anchor).verify(
            AttestationInput(
                object: request.object, keyID: device.keyID, clientDataHash: Digest.sha256(request.challenge.bytes), appIDs: [world.appID],
                allowedEnvironments: [.production], time: world.clock.now()))
        let stored = try #require(try world.store.device(keyID: device.keyID))
        #expect(stored.credentialSHA256 == Digest.sha256(verified.credentialCertificate))
    }
}
