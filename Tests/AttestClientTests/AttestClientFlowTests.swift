import AttestClient
import AttestClientSimulator
import AttestTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("AttestClient against a real attestd: attest once, cache, renew by assertion")
struct AttestClientFlowTests {
    @Test("the first call attests a new key and returns a token attestd accepts; the key ID is saved", arguments: StoreBackend.available)
    func firstCallAttests(backend: StoreBackend) async throws {
        let world = try ClientWorld(backend)
        let store = world.keyStore()
        let client = world.client(device: try world.device(), keyStore: store)

        let token = try await client.token()

        #expect(token.value.hasPrefix("atk_"))
        #expect(abs(token.expiresAt.timeIntervalSince(world.clock.now) - 3600) < 1)
        #expect(try world.requests("challenge") == 1)
        #expect(try world.requests("attest", status: 200) == 1)
        #expect(try world.requests("token") == 0)
        let keyID = try #require(try store.load())
        #expect(Data(base64Encoded: keyID)?.count == 32)
        #expect(try world.deviceKeys() == 1)
        // The token works at the gateway.
        let request = try await client.authorize(URLRequest(url: world.baseURL.appendingPathComponent("v1/authorize")))
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer \(token.value)")
        let (_, response) = try await world.transport.send(request, timeout: 5)
        #expect(response.statusCode == 200)
    }

    @Test("the token is cached while more than the renewal margin remains, then renewed by assertion, never by attestation")
    func renewalAtTheMargin() async throws {
        let world = try ClientWorld()
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        let first = try await client.token()
        let before = try world.allRequests()

        world.clock.advance(3600 - 301)  // 301 s of life left: more than the 5-minute margin
        #expect(try await client.token() == first)
        #expect(try await client.token() == first)
        #expect(try world.allRequests() == before)

        world.clock.advance(2)  // 299 s left: within the margin
        let renewed = try await client.token()
        #expect(renewed != first)
        #expect(abs(renewed.expiresAt.timeIntervalSince(world.clock.now) - 3600) < 1)
        #expect(try world.requests("token", status: 200) == 1)
        #expect(try world.requests("attest") == 1)
        #expect(try world.allRequests() == before + 2)  // one challenge, one /v1/token

        world.clock.advance(2 * 3600)  // long expired
        let third = try await client.token()
        #expect(third != renewed)
        #expect(try world.requests("token", status: 200) == 2)
        #expect(try world.requests("attest") == 1)
    }

    @Test(
        "a new client after an app restart (same key store, same device directory) refreshes by assertion",
        arguments: StoreBackend.available)
    func restartRefreshesByAssertion(backend: StoreBackend) async throws {
        let world = try ClientWorld(backend)
        let store = world.keyStore()
        let first = try await world.client(device: try world.device(), keyStore: store).token()

        // The app restarts: new objects, the same files.
        let restarted = world.client(device: try world.device(), keyStore: world.keyStore())
        let second = try await restarted.token()

        #expect(second != first)
        #expect(try world.requests("attest") == 1)
        #expect(try world.requests("token", status: 200) == 1)
        #expect(try world.deviceKeys() == 1)
        // And again: the simulated device's assertion counter persisted.
        _ = try await world.client(device: try world.device(), keyStore: world.keyStore()).token()
        #expect(try world.requests("token", status: 200) == 2)
    }

    @Test("100 concurrent first calls share one attestation and get the same token", arguments: StoreBackend.available)
    func concurrentCallersShareOneAttestation(backend: StoreBackend) async throws {
        let world = try ClientWorld(backend)
        let device = HookedDevice(try world.device()) { _, _ in }
        let client = world.client(device: device, keyStore: world.keyStore())

        let tokens = try await withThrowingTaskGroup(of: AccessToken.self) { group in
            for _ in 0..<100 { group.addTask { try await client.token() } }
            return try await group.reduce(into: [AccessToken]()) { $0.append($1) }
        }

        #expect(tokens.count == 100)
        #expect(Set(tokens.map(\.value)).count == 1)
        #expect(try world.requests("attest") == 1)
        #expect(try world.requests("challenge") == 1)
        #expect(device.calls.count("generateKey") == 1)
        #expect(device.calls.count("attestKey") == 1)
    }

    @Test("100 concurrent calls within the margin share one refresh")
    func concurrentCallersShareOneRefresh() async throws {
        let world = try ClientWorld()
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        let first = try await client.token()
        world.clock.advance(3600)

        let tokens = try await withThrowingTaskGroup(of: AccessToken.self) { group in
            for _ in 0..<100 { group.addTask { try await client.token() } }
            return try await group.reduce(into: [AccessToken]()) { $0.append($1) }
        }

        #expect(Set(tokens.map(\.value)).count == 1)
        #expect(tokens.first != first)
        #expect(try world.requests("token") == 1)
        #expect(try world.requests("attest") == 1)
    }

    @Test("token(forcingRefresh: true) replaces a token the API refused, by assertion")
    func forcedRefresh() async throws {
        let world = try ClientWorld()
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        let first = try await client.token()
        let forced = try await client.token(forcingRefresh: true)
        #expect(forced != first)
        #expect(try world.requests("token", status: 200) == 1)
        #expect(try await client.token() == forced)
        #expect(try world.requests("token") == 1)
    }

    @Test("a device without App Attest gets unsupportedDevice and makes no request")
    func unsupportedDevice() async throws {
        let world = try ClientWorld()
        let client = world.client(device: UnsupportedDevice(), keyStore: world.keyStore())
        await #expect(throws: AttestClientError.unsupportedDevice) { try await client.token() }
        #expect(try world.allRequests() == 0)
    }

    @Test("printing or dumping a token never shows it")
    func tokenIsRedacted() async throws {
        let world = try ClientWorld()
        let token = try await world.client(device: try world.device(), keyStore: world.keyStore()).token()
        var dumped = ""
        dump(token, to: &dumped)
        for text in [String(describing: token), String(reflecting: token), "\(token)", dumped] {
            #expect(!text.contains(token.value))
            #expect(text.contains("redacted"))
        }
    }
}

/// A device whose App Attest is not available (the iOS Simulator, most Macs, app extensions).
struct UnsupportedDevice: AppAttestDevice {
    var isSupported: Bool { false }
    func generateKey() async throws -> String { throw AppAttestDeviceError.featureUnsupported }
    func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data { throw AppAttestDeviceError.featureUnsupported }
    func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data { throw AppAttestDeviceError.featureUnsupported }
}
