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
        #expect(try world.service.purgeExpired().removed == 0)
        world.clock.advance(300)
        #expect(try world.service.purgeExpired().removed == 2)  // the used and the unused challenge
        #expect(try world.service.introspect(token) != nil)
        world.clock.advance(3300)
        #expect(try world.service.purgeExpired().removed == 1)  // the token
        #expect(try world.service.introspect(token) == nil)
    }
}
