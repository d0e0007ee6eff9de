import AttestCore
import AttestCrypto
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// Budgets, trust anchors, App IDs and the integration's policies.
extension TokenServiceTests {
    @Test("junk attestations with unusable challenges do not spend the integration's attest budget")
    func attestBudgetNeedsUsableChallenge() throws {
        var policy = ServicePolicy()
        policy.perAddress = .unlimited
        policy.attestPerIntegration = RateLimit(perSecond: 1, burst: 2)
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        for seed in 0..<50 {
            var junk = try world.attestRequest(try SyntheticDevice())
            junk.challenge = try #require(Challenge([UInt8](repeating: UInt8(seed), count: 32)))
            #expect(serviceError { try world.service.attest(junk, from: "10.0.0.\(seed)") }?.subcode == .challengeUnknown)
        }
        // The genuine device still gets through: the bucket was never charged.
        _ = try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1")
        _ = try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1")
        let third = serviceError { try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1") }
        #expect(third?.code == .rateLimited)
    }

    @Test("a rate-limited attestation spends its challenge")
    func rateLimitedAttestSpendsChallenge() throws {
        var policy = ServicePolicy()
        policy.perAddress = RateLimit(perSecond: 1, burst: 1)
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        let first = try world.attestRequest(try SyntheticDevice())
        world.clock.advance(5)  // the challenges come from 127.0.0.1, whose bucket also holds one
        let second = try world.attestRequest(try SyntheticDevice())
        _ = try world.service.attest(first, from: "10.0.0.9")
        #expect(serviceError { try world.service.attest(second, from: "10.0.0.9") }?.code == .rateLimited)
        world.clock.advance(5)
        #expect(serviceError { try world.service.attest(second, from: "10.0.0.9") } == ServiceError(.invalidChallenge, .challengeUsed, ""))
    }

    @Test("a key attested under one trust anchor cannot refresh under another")
    func refreshNeedsTheSameAnchor() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var device = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        #expect(try world.store.device(keyID: device.keyID)?.trustAnchor == Hex.encode(world.pki.root.sha256Fingerprint))
        let otherPKI = try SyntheticPKI(validAround: ServiceWorld.start)
        let otherService = TokenService(
            store: world.store, verifier: try AttestationVerifier(anchor: otherPKI.anchor), clock: world.clock, policy: ServicePolicy())
        let request = try world.refreshRequest(&device)
        #expect(
            serviceError { try otherService.refresh(request, from: "127.0.0.1") }
                == ServiceError(.assertionRejected, .check(.trustAnchor), ""))
        #expect(try world.store.device(keyID: device.keyID)?.counter == 0)
    }

    @Test("with a next root added beside the current one, new devices attest under either and every device keeps refreshing")
    func additionalRoot() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var before = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(before), from: "127.0.0.1")
        let next = try SyntheticPKI(validAround: ServiceWorld.start, rootName: "Next App Attestation Root CA")
        let both = TokenService(
            store: world.store, verifier: try AttestationVerifier(anchors: [world.pki.anchor, next.anchor]), clock: world.clock,
            policy: world.service.policy)
        var under = try SyntheticDevice()
        _ = try both.attest(try world.attestRequest(under, under: next), from: "127.0.0.1")
        // Each device records the root its chain ended at.
        #expect(try world.store.device(keyID: before.keyID)?.trustAnchor == Hex.encode(world.pki.root.sha256Fingerprint))
        #expect(try world.store.device(keyID: under.keyID)?.trustAnchor == Hex.encode(next.root.sha256Fingerprint))
        _ = try both.refresh(try world.refreshRequest(&before), from: "127.0.0.1")
        _ = try both.refresh(try world.refreshRequest(&under), from: "127.0.0.1")
        // Without the added root, a device attested under it is refused; one attested under the
        // current root still is not.
        #expect(
            serviceError { try world.service.refresh(try world.refreshRequest(&under), from: "127.0.0.1") }
                == ServiceError(.assertionRejected, .check(.trustAnchor), ""))
        _ = try world.service.refresh(try world.refreshRequest(&before), from: "127.0.0.1")
        // A chain to neither root is refused with the primary's reason.
        let stranger = try SyntheticPKI(validAround: ServiceWorld.start)
        #expect(
            serviceError { try both.attest(try world.attestRequest(try SyntheticDevice(), under: stranger), from: "127.0.0.1") }?.code
                == .attestationRejected)
    }

    @Test("an assertion must carry the App ID its key attested as, not another bundle ID of the integration")
    func refreshBoundToAttestedAppID() throws {
        let world = try ServiceWorld(bundleIDs: ["com.example.messages", "com.example.other"])
        defer { world.remove() }
        var device = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        #expect(try world.store.device(keyID: device.keyID)?.appID == "ABCDE12345.com.example.messages")
        let challenge = try world.challenge()
        let other = try AppID(teamID: "ABCDE12345", bundleID: "com.example.other")
        let request = RefreshRequest(
            clientID: world.clientID, keyID: try #require(KeyID(device.keyID)),
            object: try device.assertion(clientData: challenge.bytes, appID: other), challenge: challenge)
        #expect(
            serviceError { try world.service.refresh(request, from: "127.0.0.1") }
                == ServiceError(.assertionRejected, .check(.rpIDMismatch), ""))
        _ = try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1")
    }

    @Test("storage's default anchor for devices attested before it was recorded is Apple's root")
    func defaultAnchorIsApple() {
        #expect(DeviceRecord.appleRootAnchor == Hex.encode(TrustAnchor.appleRootFingerprint))
    }

    @Test("with max live tokens per device N, a refresh retires the device's tokens beyond the newest N")
    func maxLiveTokensPerDevice() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let limited = try world.admin.create(
            workspaceID: "ws_limited", name: "Limited", teamID: "ABCDE12345", bundleIDs: ["com.example.messages"],
            environments: [.production], maxLiveTokensPerDevice: 2)
        var device = try SyntheticDevice()
        var request = try world.attestRequest(device)
        func rebind(_ challenge: Challenge) throws -> Challenge {
            // attestRequest issues its challenge for the world's integration: issue one for this one instead.
            let issued = try world.service.issueChallenge(clientID: try #require(limited.issuedClientID), from: "127.0.0.1")
            let bytes = try #require(Base64Text.decode(issued.challenge, .url))
            return try #require(Challenge(bytes))
        }
        let first = try rebind(request.challenge)
        let parts = device.attestationParts(
            appID: world.appID, environment: .production, clientDataHash: Digest.sha256(first.bytes), time: world.clock.now())
        request = AttestRequest(
            clientID: try #require(limited.issuedClientID), keyID: request.keyID,
            object: try device.attestationObject(parts, pki: world.pki),
            challenge: first)
        var tokens = [try world.service.attest(request, from: "127.0.0.1").accessToken]
        for _ in 0..<3 {
            let challenge = try rebind(first)
            let refresh = RefreshRequest(
                clientID: try #require(limited.issuedClientID), keyID: request.keyID,
                object: try device.assertion(clientData: challenge.bytes, appID: world.appID),
                challenge: challenge)
            world.clock.advance(1)
            tokens.append(try world.service.refresh(refresh, from: "127.0.0.1").accessToken)
        }
        #expect(try tokens.map { try world.service.introspect($0) != nil } == [false, false, true, true])
    }

    @Test("stores every attestation's receipt verdict, and refuses with the receipt's check only when the integration requires a valid one")
    func receiptPolicy() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let device = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        let verdict = try #require(try world.store.device(keyID: device.keyID)?.receiptState?.verdict)
        #expect(verdict.description.hasPrefix("receipt_"), "a synthetic device's receipt is not Apple's: \(verdict)")
        _ = try world.store.updatePolicy(
            clientID: world.integration.clientID, policy: IntegrationPolicy(requireValidReceipt: true), maxLiveTokensPerDevice: nil,
            audit: nil)
        let strict = try SyntheticDevice()
        let refused = serviceError { try world.service.attest(try world.attestRequest(strict), from: "127.0.0.1") }
        #expect(refused?.code == .attestationRejected)
        #expect(refused?.subcode.identifier == verdict.description)
        #expect(try world.store.device(keyID: strict.keyID) == nil)
    }

    @Test("refuses a refresh while the device's risk metric exceeds the integration's maximum, and allows it at the maximum")
    func riskMetricPolicy() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var device = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        _ = try world.store.updatePolicy(
            clientID: world.integration.clientID, policy: IntegrationPolicy(maxRiskMetric: 5), maxLiveTokensPerDevice: nil, audit: nil)
        let risky = ReceiptState(verdict: .valid, type: .receipt, createdAt: 1, expiresAt: 2, riskMetric: 6, refreshedAt: 1)
        try world.store.updateReceipt(keyID: device.keyID, receipt: [1], state: risky)
        #expect(
            serviceError { try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1") }
                == ServiceError(.riskMetricExceeded, .riskMetricExceeded, ""))
        var fine = risky
        fine.riskMetric = 5
        try world.store.updateReceipt(keyID: device.keyID, receipt: [1], state: fine)
        _ = try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1")
    }

    @Test("refuses new keys past the integration's maximum per hour with 429, and accepts them again an hour later")
    func newKeysPerHour() throws {
        var policy = ServicePolicy()
        policy.perAddress = .unlimited
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        _ = try world.store.updatePolicy(
            clientID: world.integration.clientID, policy: IntegrationPolicy(maxNewKeysPerHour: 2), maxLiveTokensPerDevice: nil, audit: nil)
        for _ in 0..<2 { _ = try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1") }
        let third = serviceError { try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1") }
        #expect(third == ServiceError(.rateLimited, .newKeysPerHour, ""))
        world.clock.advance(3601)
        _ = try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1")
    }

    @Test("answers integration_not_found for an unknown client ID")
    func unknownIntegration() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        #expect(
            serviceError { try world.service.issueChallenge(clientID: ClientID.unknown, from: "127.0.0.1") }?.code == .integrationNotFound)
    }
}
