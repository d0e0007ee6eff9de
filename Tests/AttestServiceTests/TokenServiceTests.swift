import AttestCore
import AttestCrypto
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

@Suite("Token service: the whole flow and each rule")
struct TokenServiceTests {
    @Test("challenge, attest, introspect, refresh by assertion, revoke")
    func wholeFlow() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var device = try SyntheticDevice()
        let first = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        #expect(first.accessToken.hasPrefix("atk_"))
        #expect(first.accessToken.utf8.count == TokenService.tokenLength)
        #expect(first.expiresIn == 3600)
        #expect(first.scope == "messages")
        #expect(first.workspaceID == "ws_test")
        let active = try #require(try world.service.introspect(first.accessToken))
        #expect(active.clientID == world.integration.clientID)
        #expect(active.workspaceID == "ws_test")
        #expect(active.expiresAt == ServiceWorld.start + 3600)

        let stored = try #require(try world.store.device(keyID: device.keyID))
        #expect(stored.counter == 0)
        #expect(stored.publicKey == device.publicPoint)
        #expect(stored.environment == .production)

        let second = try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1")
        #expect(second.accessToken != first.accessToken)
        #expect(try world.store.device(keyID: device.keyID)?.counter == 1)

        let summary = try #require(try world.admin.revoke(clientID: world.integration.clientID))
        #expect(summary == RevocationSummary(changed: true, tokensRevoked: 2, devicesBlocked: 1))
        #expect(try world.service.introspect(first.accessToken) == nil)
        #expect(try world.service.introspect(second.accessToken) == nil)
        #expect(
            serviceError { try world.service.issueChallenge(clientID: world.clientID, from: "127.0.0.1") }?.code
                == .integrationRevoked)
        #expect(
            try world.admin.revoke(clientID: world.integration.clientID)
                == RevocationSummary(changed: false, tokensRevoked: 0, devicesBlocked: 0))
    }

    @Test("consumes a challenge on first presentation, after success and after failure")
    func challengeSingleUse() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let device = try SyntheticDevice()
        let request = try world.attestRequest(device)
        _ = try world.service.attest(request, from: "127.0.0.1")
        #expect(
            serviceError { try world.service.attest(request, from: "127.0.0.1") }
                == ServiceError(.invalidChallenge, .challengeUsed, ""))

        var broken = try world.attestRequest(try SyntheticDevice())
        broken.keyID = try #require(KeyID(device.keyID))  // wrong key ID: verification fails
        #expect(serviceError { try world.service.attest(broken, from: "127.0.0.1") }?.code == .attestationRejected)
        #expect(
            serviceError { try world.service.attest(broken, from: "127.0.0.1") }
                == ServiceError(.invalidChallenge, .challengeUsed, ""))
    }

    @Test("consumes the challenge of a failed refresh too: the same challenge with a valid assertion is refused")
    func refreshFailureConsumes() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var device = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        var valid = try world.refreshRequest(&device)
        var broken = valid
        broken.object = try world.refreshRequest(&device, counter: 0).object  // counter 0: refused
        #expect(serviceError { try world.service.refresh(broken, from: "127.0.0.1") }?.code == .assertionRejected)
        valid.challenge = broken.challenge
        #expect(
            serviceError { try world.service.refresh(valid, from: "127.0.0.1") }
                == ServiceError(.invalidChallenge, .challengeUsed, ""))
    }

    @Test("refuses an expired challenge at TTL + 1 s and accepts it at TTL - 1 s")
    func challengeExpiry() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let late = try world.attestRequest(try SyntheticDevice())
        let onTime = try world.attestRequest(try SyntheticDevice())
        world.clock.advance(299)
        _ = try world.service.attest(onTime, from: "127.0.0.1")
        world.clock.advance(2)
        #expect(
            serviceError { try world.service.attest(late, from: "127.0.0.1") }
                == ServiceError(.invalidChallenge, .challengeExpired, ""))
    }

    @Test("refuses a challenge issued to another integration and one never issued")
    func challengeBinding() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let other = try world.admin.create(
            workspaceID: "ws_other", name: "Other", teamID: "ABCDE12345", bundleIDs: ["com.example.messages"], environments: [.production])
        var request = try world.attestRequest(try SyntheticDevice())
        request.clientID = try #require(other.issuedClientID)
        #expect(
            serviceError { try world.service.attest(request, from: "127.0.0.1") }
                == ServiceError(.invalidChallenge, .challengeWrongIntegration, ""))
        request = try world.attestRequest(try SyntheticDevice())
        request.challenge = try #require(Challenge([UInt8](repeating: 7, count: 32)))
        #expect(
            serviceError { try world.service.attest(request, from: "127.0.0.1") }
                == ServiceError(.invalidChallenge, .challengeUnknown, ""))
    }

    @Test("passes the verifier's failed check through and stores nothing")
    func rejectionStoresNothing() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let device = try SyntheticDevice()
        let challenge = try world.challenge()
        var parts = device.attestationParts(
            appID: world.appID, environment: .production, clientDataHash: Digest.sha256(challenge.bytes), time: world.clock.now())
        parts.rpIDHash = try AppID(teamID: "ABCDE12345", bundleID: "com.example.other").rpIDHash
        let request = AttestRequest(
            clientID: world.clientID, keyID: try #require(KeyID(device.keyID)),
            object: try device.attestationObject(parts, pki: world.pki), challenge: challenge)
        #expect(
            serviceError { try world.service.attest(request, from: "127.0.0.1") }
                == ServiceError(.attestationRejected, .check(.rpIDMismatch), ""))
        #expect(try world.store.device(keyID: device.keyID) == nil)
    }

    @Test("refuses a development key on a production-only integration")
    func environmentPolicy() throws {
        let world = try ServiceWorld(environments: [.production])
        defer { world.remove() }
        let request = try world.attestRequest(try SyntheticDevice(), environment: .development)
        #expect(
            serviceError { try world.service.attest(request, from: "127.0.0.1") }
                == ServiceError(.attestationRejected, .check(.environmentNotAllowed), ""))
    }

    @Test("refuses a second attestation of a registered key and leaves the device untouched")
    func keyAttestsOnce() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var device = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        _ = try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1")
        let before = try world.store.device(keyID: device.keyID)
        #expect(
            serviceError { try world.service.attest(try world.attestRequest(device), from: "127.0.0.1") }?.code == .keyAlreadyRegistered)
        #expect(try world.store.device(keyID: device.keyID) == before)
    }

    @Test("answers an unknown key ID exactly as a bad signature")
    func unknownKeyLooksLikeBadSignature() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var registered = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(registered), from: "127.0.0.1")
        var stranger = try SyntheticDevice()
        let unknown = serviceError { try world.service.refresh(try world.refreshRequest(&stranger), from: "127.0.0.1") }
        var forged = try world.refreshRequest(&registered)
        forged.object = try world.refreshRequest(&stranger).object
        let badSignature = serviceError { try world.service.refresh(forged, from: "127.0.0.1") }
        #expect(unknown != nil)
        #expect(unknown == badSignature)
        #expect(unknown?.reason == badSignature?.reason)
    }

    @Test("refuses a replayed assertion and leaves the counter")
    func replayedAssertion() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var device = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        _ = try world.service.refresh(try world.refreshRequest(&device, counter: 5), from: "127.0.0.1")
        let replay = try world.refreshRequest(&device, counter: 5)
        #expect(
            serviceError { try world.service.refresh(replay, from: "127.0.0.1") }
                == ServiceError(.assertionRejected, .check(.counterNotIncreasing), ""))
        #expect(try world.store.device(keyID: device.keyID)?.counter == 5)
    }

    @Test("tokens are valid at issue + 3599 s and invalid at + 3600 s (T3)")
    func tokenExpiry() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let token = try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1").accessToken
        world.clock.advance(3599)
        #expect(try world.service.introspect(token) != nil)
        world.clock.advance(1)
        #expect(try world.service.introspect(token) == nil)
    }

    @Test("refuses tokens that are altered, truncated, empty, oversized or foreign (T4)")
    func tokenShapes() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let token = try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1").accessToken
        var altered = Array(token.utf8)
        altered[10] = altered[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        for candidate in [
            String(decoding: altered, as: UTF8.self), String(token.dropLast()), "", String(repeating: "a", count: 10_000), token + "x",
            "atk_é" + token.dropFirst(6),
        ] {
            #expect(try world.service.introspect(candidate) == nil)
        }
    }

    @Test("of 50 concurrent uses of one challenge exactly one succeeds")
    func parallelChallenge() async throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let challenge = try world.challenge()
        var requests: [AttestRequest] = []
        for _ in 0..<50 {
            let device = try SyntheticDevice()
            let parts = device.attestationParts(
                appID: world.appID, environment: .production, clientDataHash: Digest.sha256(challenge.bytes), time: world.clock.now())
            requests.append(
                AttestRequest(
                    clientID: world.clientID, keyID: try #require(KeyID(device.keyID)),
                    object: try device.attestationObject(parts, pki: world.pki), challenge: challenge))
        }
        let service = world.service
        let successes = await withTaskGroup(of: Bool.self) { group in
            for request in requests { group.addTask { (try? service.attest(request, from: "127.0.0.1")) != nil } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(successes == 1)
    }

    @Test("of 50 concurrent assertions with the same counter exactly one mints a token")
    func parallelCounter() async throws {
        var policy = ServicePolicy()
        policy.perAddress = .unlimited
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        var device = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        var requests: [RefreshRequest] = []
        for _ in 0..<50 { requests.append(try world.refreshRequest(&device, counter: 1)) }
        let service = world.service
        let successes = await withTaskGroup(of: Bool.self) { group in
            for request in requests { group.addTask { (try? service.refresh(request, from: "127.0.0.1")) != nil } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(successes == 1)
        #expect(try world.store.device(keyID: device.keyID)?.counter == 1)
    }

    @Test("after revoking an integration with 1,000 outstanding tokens none is active (R1)")
    func revokeManyTokens() throws {
        var policy = ServicePolicy()
        policy.perAddress = .unlimited
        policy.challengePerIntegration = .unlimited
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        var device = try SyntheticDevice()
        var tokens = [try world.service.attest(try world.attestRequest(device), from: "127.0.0.1").accessToken]
        for _ in 0..<999 { tokens.append(try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1").accessToken) }
        #expect(try tokens.allSatisfy { try world.service.introspect($0) != nil })
        let summary = try world.admin.revoke(clientID: world.integration.clientID)
        #expect(summary?.tokensRevoked == 1000)
        #expect(try tokens.allSatisfy { try world.service.introspect($0) == nil })
        #expect(
            serviceError { try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1") }?.code == .integrationRevoked)
    }

    @Test("stores no token in clear: the database, WAL and SHM files never contain one (T1)")
    func noPlaintextTokens() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var device = try SyntheticDevice()
        var tokens = [try world.service.attest(try world.attestRequest(device), from: "127.0.0.1").accessToken]
        for _ in 0..<20 { tokens.append(try world.service.refresh(try world.refreshRequest(&device), from: "127.0.0.1").accessToken) }
        let files = try FileManager.default.contentsOfDirectory(atPath: world.directory.path)
        #expect(files.contains("attestd.sqlite-wal"))
        for file in files {
            let contents = try Data(contentsOf: world.directory.appendingPathComponent(file))
            for token in tokens {
                #expect(contents.range(of: Data(token.utf8)) == nil, "\(file) holds a token")
                #expect(contents.range(of: Data(token.utf8.dropFirst(4))) == nil, "\(file) holds a token body")
            }
        }
    }

    @Test("limits challenges per client address with a retry delay (429)")
    func rateLimit() throws {
        var policy = ServicePolicy()
        policy.perAddress = RateLimit(perSecond: 1, burst: 3)
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        for _ in 0..<3 { _ = try world.service.issueChallenge(clientID: world.clientID, from: "10.0.0.1") }
        let limited = serviceError { try world.service.issueChallenge(clientID: world.clientID, from: "10.0.0.1") }
        #expect(limited?.code == .rateLimited)
        #expect(limited?.retryAfter == 1)
        _ = try world.service.issueChallenge(clientID: world.clientID, from: "10.0.0.2")
        world.clock.advance(1)
        _ = try world.service.issueChallenge(clientID: world.clientID, from: "10.0.0.1")
    }

    @Test("commits security state with synchronous=FULL: only challenge issuance relaxes it, and restores it")
    func durability() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        #expect(try world.store.writerSynchronousSetting() == 2)
        _ = try world.challenge()
        #expect(try world.store.writerSynchronousSetting() == 2)
    }

    @Test("purges expired tokens and challenges, and nothing else")
    func purge() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let token = try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1").accessToken
        _ = try world.challenge()
        #expect(try world.service.purgeExpired() == 0)
        world.clock.advance(300)
        #expect(try world.service.purgeExpired() == 2)  // the used and the unused challenge
        #expect(try world.service.introspect(token) != nil)
        world.clock.advance(3300)
        #expect(try world.service.purgeExpired() == 1)  // the token
        #expect(try world.service.introspect(token) == nil)
    }

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

@Suite("Integration administration")
struct IntegrationAdminTests {
    @Test(
        "refuses invalid team IDs, bundle IDs and counts without normalising",
        arguments: [
            ("abcde12345", ["com.example.app"], "team_id"), ("ABCDE12345", ["com.example.app "], "bundle_id"),
            ("ABCDE12345", [], "bundle_id_count"), ("ABCDE12345", (0...32).map { "com.example.app\($0)" }, "bundle_id_count"),
            ("ABCDE12345", ["com.example.app", "com.example.app"], "bundle_id_duplicate"),
        ])
    func validation(_ teamID: String, _ bundleIDs: [String], _ reason: String) throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let error = serviceError {
            try world.admin.create(workspaceID: "ws", name: "n", teamID: teamID, bundleIDs: bundleIDs, environments: [.production])
        }
        #expect(error?.code == .invalidIntegration)
        #expect(error?.subcode.identifier == reason)
        #expect(try world.admin.list().count == 1)
    }

    @Test("client IDs are clid_ plus 128 random bits and are never reused after revocation")
    func clientIDs() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        _ = try world.admin.revoke(clientID: world.integration.clientID)
        var seen: Set<String> = [world.integration.clientID]
        for index in 0..<20 {
            let record = try world.admin.create(
                workspaceID: "ws", name: "n\(index)", teamID: "ABCDE12345", bundleIDs: ["com.example.app"], environments: [.production])
            #expect(record.clientID.hasPrefix("clid_"))
            #expect(record.clientID.utf8.count == 5 + 32)
            #expect(seen.insert(record.clientID).inserted)
        }
        #expect(try world.admin.show(clientID: world.integration.clientID)?.status == .revoked)
    }
}
