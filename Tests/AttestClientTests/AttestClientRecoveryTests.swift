import AttestClient
import AttestClientSimulator
import AttestTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("AttestClient recovers what breaks real apps, and stops where it must")
struct AttestClientRecoveryTests {
    @Test("a lost answer to /v1/attest: Apple refuses to attest the key again, so it is refreshed by assertion; one key")
    func lostAttestAnswer() async throws {
        let world = try ClientWorld()
        world.transportLoses("/v1/attest")
        let device = HookedDevice(try world.device()) { _, _ in }
        let client = world.client(device: device, keyStore: world.keyStore())

        let token = try await client.token()

        #expect(world.lostAnswers == 1)
        #expect(try world.requests("attest", status: 200) == 1)  // the lost one: attestd registered the key
        #expect(try world.requests("token", status: 200) == 1)
        #expect(device.calls.count("attestKey") == 2)  // the second refused with invalidKey, as Apple does
        #expect(device.calls.count("generateKey") == 1)
        #expect(try world.deviceKeys() == 1)
        #expect(try await world.client(device: try world.device(), keyStore: world.keyStore()).token() != token)
        #expect(try world.requests("attest", status: 200) == 1)
    }

    @Test("a lost answer to /v1/attest on a device that attests again: attestd's 409 key_already_registered, then an assertion")
    func lostAttestAnswerThen409() async throws {
        let world = try ClientWorld()
        world.transportLoses("/v1/attest")
        let client = world.client(device: try world.device(reattestation: .allowed), keyStore: world.keyStore())

        _ = try await client.token()

        #expect(world.lostAnswers == 1)
        #expect(try world.requests("attest", status: 200) == 1)
        #expect(try world.requests("attest", status: 409) == 1)
        #expect(try world.requests("token", status: 200) == 1)
        #expect(try world.deviceKeys() == 1)
    }

    @Test("a key attestd no longer knows (its database restored from an older backup): a new key, attested once")
    func lostKeyAfterRestore() async throws {
        let world = try ClientWorld()
        // The backup: attestd's files while it is stopped, before the device registered.
        let backup = world.directory.appendingPathComponent("backup")
        try FileManager.default.createDirectory(at: backup, withIntermediateDirectories: true)
        try world.stop()
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: world.sqliteFile.path + suffix) {
            try FileManager.default.copyItem(
                atPath: world.sqliteFile.path + suffix, toPath: backup.appendingPathComponent("attestd.sqlite" + suffix).path)
        }
        try world.start()
        let store = world.keyStore()
        let client = world.client(device: try world.device(), keyStore: store)
        _ = try await client.token()
        let firstKey = try store.load()

        try world.stop()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: world.sqliteFile.path + suffix) }
        for suffix in ["", "-wal"]
        where FileManager.default.fileExists(atPath: backup.appendingPathComponent("attestd.sqlite" + suffix).path) {
            try FileManager.default.copyItem(
                atPath: backup.appendingPathComponent("attestd.sqlite" + suffix).path, toPath: world.sqliteFile.path + suffix)
        }
        try world.start()
        world.clock.advance(3600)
        _ = try await client.token()

        #expect(try world.requests("token", status: 401) == 1)  // assertion_rejected: unknown key
        #expect(try world.requests("attest", status: 200) == 2)
        #expect(try store.load() != firstKey)
        #expect(try world.deviceKeys() == 2)
        // The new key is the one refreshed from now on.
        world.clock.advance(3600)
        _ = try await client.token()
        #expect(try world.requests("token", status: 200) == 1)
        #expect(try world.requests("attest", status: 200) == 2)
    }

    @Test("a key saved but never attested (the app stopped in between) is attested at the next launch, not replaced")
    func savedKeyNeverAttested() async throws {
        let world = try ClientWorld()
        let store = world.keyStore()
        let device = try world.device()
        let keyID = try await device.generateKey()
        try store.save(keyID)

        _ = try await world.client(device: device, keyStore: store).token()

        #expect(try store.load() == keyID)
        #expect(try world.requests("attest", status: 200) == 1)
        #expect(try world.deviceKeys() == 1)
    }

    @Test("401 invalid_challenge on /v1/attest: one more try with a new challenge (and, as Apple attests a key once, a new key)")
    func invalidChallengeOnAttest() async throws {
        let world = try ClientWorld { $0.insecureTestMode = true }
        let device = HookedDevice(try world.device()) { call, number in
            // The first attestation reaches attestd after its challenge expired.
            if call == "attestKey" { try world.setServerClock(number == 1 ? world.serverDate.addingTimeInterval(1000) : nil) }
        }
        let token = try await world.client(device: device, keyStore: world.keyStore()).token()
        #expect(token.value.hasPrefix("atk_"))
        #expect(try world.requests("attest", status: 401) == 1)
        #expect(try world.requests("attest", status: 200) == 1)
        #expect(try world.deviceKeys() == 2)
    }

    @Test("401 invalid_challenge on /v1/token: one more try with a new challenge, then a second one is thrown")
    func invalidChallengeOnRefresh() async throws {
        let world = try ClientWorld { $0.insecureTestMode = true }
        let expireEvery = Counter()
        let device = HookedDevice(try world.device()) { call, number in
            guard call == "generateAssertion" else { return }
            // Refresh 1: only its first assertion is late. Refresh 2: every one is.
            let late = number == 1 || expireEvery.count("on") > 0
            try world.setServerClock(late ? world.serverDate.addingTimeInterval(1000 * Double(number)) : nil)
        }
        let client = world.client(device: device, keyStore: world.keyStore())
        _ = try await client.token()
        world.clock.advance(3600)
        _ = try await client.token()
        #expect(try world.requests("token", status: 401) == 1)
        #expect(try world.requests("token", status: 200) == 1)

        _ = expireEvery.next("on")
        world.clock.advance(3600)
        await #expect(throws: AttestClientError.rejected(status: 401, code: "invalid_challenge", reason: "challenge_expired")) {
            try await client.token()
        }
        #expect(try world.requests("token", status: 401) == 3)
        #expect(try world.requests("attest") == 1)
    }

    @Test("a blocked device gets deviceBlocked, and no new key is attested behind the block")
    func blockedDevice() async throws {
        let world = try ClientWorld()
        let store = world.keyStore()
        let client = world.client(device: try world.device(), keyStore: store)
        _ = try await client.token()
        let keyID = try #require(try store.load())
        #expect(try world.admin.blockDevice(keyID: Array(try #require(Data(base64Encoded: keyID)))) != nil)

        world.clock.advance(3600)
        await #expect(throws: AttestClientError.deviceBlocked) { try await client.token() }
        await #expect(throws: AttestClientError.deviceBlocked) { try await client.token() }
        await #expect(throws: AttestClientError.deviceBlocked) {
            try await world.client(device: try world.device(), keyStore: world.keyStore()).token()
        }
        #expect(try world.requests("attest") == 1)
        #expect(try world.requests("token", status: 403) == 3)
        #expect(try store.load() == keyID)
        #expect(try world.deviceKeys() == 1)
    }

    @Test("a revoked integration: integrationRevoked, remembered, and no request ever again", arguments: StoreBackend.available)
    func revokedIntegrationIsTerminal(backend: StoreBackend) async throws {
        let world = try ClientWorld(backend)
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        _ = try await client.token()
        _ = try world.admin.revoke(clientID: world.integration.clientID)

        world.clock.advance(3600)
        await #expect(throws: AttestClientError.integrationRevoked) { try await client.token() }
        let requests = try world.allRequests()
        for _ in 0..<5 {
            await #expect(throws: AttestClientError.integrationRevoked) { try await client.token() }
        }
        await #expect(throws: AttestClientError.integrationRevoked) { try await client.token(forcingRefresh: true) }
        await #expect(throws: AttestClientError.integrationRevoked) {
            _ = try await client.authorize(URLRequest(url: world.baseURL))
        }
        #expect(try world.allRequests() == requests)
    }

    @Test("a revoked integration on the first call: integrationRevoked after one challenge, and nothing attested")
    func revokedBeforeFirstCall() async throws {
        let world = try ClientWorld()
        _ = try world.admin.revoke(clientID: world.integration.clientID)
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        await #expect(throws: AttestClientError.integrationRevoked) { try await client.token() }
        await #expect(throws: AttestClientError.integrationRevoked) { try await client.token() }
        #expect(try world.allRequests() == 1)
    }

    @Test("a suspended integration: integrationSuspended, and a later call tries again and succeeds once resumed")
    func suspendedIntegration() async throws {
        let world = try ClientWorld()
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        _ = try await client.token()
        _ = try world.admin.setSuspended(clientID: world.integration.clientID, true)
        world.clock.advance(3600)
        await #expect(throws: AttestClientError.integrationSuspended) { try await client.token() }
        await #expect(throws: AttestClientError.integrationSuspended) { try await client.token() }
        _ = try world.admin.setSuspended(clientID: world.integration.clientID, false)
        _ = try await client.token()
        #expect(try world.requests("attest") == 1)
        #expect(try world.requests("token", status: 200) == 1)
    }

    @Test("an unknown client ID is integrationNotFound; a misspelt one is rejected 400 client_id")
    func unknownAndMalformedClientID() async throws {
        let world = try ClientWorld()
        let unknown = world.client(
            device: try world.device(), keyStore: world.keyStore(), clientID: "clid_" + String(repeating: "0", count: 32))
        await #expect(throws: AttestClientError.integrationNotFound) { try await unknown.token() }
        let misspelt = world.client(
            device: try world.device(), keyStore: world.keyStore(), clientID: world.integration.clientID.uppercased())
        await #expect(throws: AttestClientError.rejected(status: 400, code: "malformed_request", reason: "client_id")) {
            try await misspelt.token()
        }
        #expect(try world.requests("attest") == 0)
        #expect(try world.deviceKeys() == 0)
    }

    @Test("an attestation attestd refuses is rejected with its code and reason")
    func attestationRejected() async throws {
        let world = try ClientWorld()
        let developmentOnly = try world.admin.create(
            workspaceID: "ws_dev", name: "Development only", teamID: ClientWorld.teamID, bundleIDs: [ClientWorld.bundleID],
            environments: [.development])
        let client = world.client(device: try world.device(), keyStore: world.keyStore(), clientID: developmentOnly.clientID)
        await #expect(throws: AttestClientError.rejected(status: 401, code: "attestation_rejected", reason: "environment_not_allowed")) {
            try await client.token()
        }
    }
}
