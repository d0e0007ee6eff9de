import AttestClient
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What an app sees of the client over its life: where the token may go, its changes, a kept
/// token at relaunch, starting over after a block, and the opt-in log.
@Suite("AttestClient over an app's life")
struct AttestClientLifecycleTests {
    /// A key store that also keeps the token, as the Keychain store does, in memory.
    final class KeepingStore: KeyIDStore, Sendable {
        let keyID = Mutex<String?>(nil)
        let token = Mutex<(AccessToken, String)?>(nil)
        func load() throws -> String? { keyID.withLock { $0 } }
        func save(_ keyID: String) throws { self.keyID.withLock { $0 = keyID } }
        func remove() throws { keyID.withLock { $0 = nil } }
        func loadToken(scope: String) throws -> AccessToken? { token.withLock { $0?.1 == scope ? $0?.0 : nil } }
        func saveToken(_ token: AccessToken?, scope: String) throws { self.token.withLock { $0 = token.map { ($0, scope) } } }
        /// The kept token, whatever its scope.
        var kept: AccessToken? { token.withLock { $0?.0 } }
    }

    @Test("authorize attaches the token only to the configured API hosts over https (http for loopback), and fetches none otherwise")
    func authorizeHosts() async throws {
        let world = try ClientWorld()
        let client = world.client(
            configuration: AttestClient.Configuration(
                baseURL: world.baseURL, clientID: world.integration.clientID,
                apiHosts: ["api.example.com", "127.0.0.1", "127.example.com"]),
            device: try world.device(), keyStore: world.keyStore())
        for refused in [
            "https://evil.example.com/v1/messages", "http://api.example.com/v1/messages", "https://api.example.com.evil.net/",
            "http://127.example.com/v1/messages",
        ] {
            let request = URLRequest(url: try #require(URL(string: refused)))
            await #expect(throws: AttestClientError.hostNotAllowed(request.url?.host ?? "")) { _ = try await client.authorize(request) }
        }
        #expect(try world.allRequests() == 0, "no token was fetched for a refused host")
        let sent = try await client.authorize(URLRequest(url: try #require(URL(string: "https://API.example.com/v1/messages"))))
        #expect(sent.value(forHTTPHeaderField: "Authorization")?.hasPrefix("Bearer atk_") == true)
        let loopback = try await client.authorize(URLRequest(url: world.baseURL.appendingPathComponent("v1/authorize")))
        #expect(loopback.value(forHTTPHeaderField: "Authorization") == sent.value(forHTTPHeaderField: "Authorization"))
    }

    @Test(
        "a blocked device stays blocked until the app calls resetKey(); then a new key is attested, and the changes are observed",
        .timeLimit(.minutes(1)))
    func resetAfterBlock() async throws {
        let world = try ClientWorld()
        let store = KeepingStore()
        let client = world.client(device: try world.device(), keyStore: store)
        var updates = await client.tokenUpdates().makeAsyncIterator()
        let first = try await client.token()
        let keyID = try #require(try store.load())
        #expect(try world.admin.blockDevice(keyID: Array(try #require(Data(base64Encoded: keyID)))) == 1)
        for _ in 0..<2 {
            await #expect(throws: AttestClientError.deviceBlocked) { _ = try await client.token(forcingRefresh: true) }
        }
        #expect(try world.requests("attest") == 1, "never a new key on its own")
        #expect(store.kept == nil)
        try await client.resetKey()
        #expect(try store.load() == nil)
        let second = try await client.token()
        #expect(try second != first && store.load() != keyID && world.requests("attest", status: 200) == 2)
        // The stream keeps what it was sent: the three updates are waiting in it.
        var seen: [AccessToken?] = []
        for _ in 0..<3 { seen.append(try #require(await updates.next())) }
        #expect(seen == [first, nil, second])
    }

    @Test("a relaunch with a key store that keeps the token needs no round trip while the token is fresh")
    func keptTokenAtRelaunch() async throws {
        let world = try ClientWorld()
        let store = KeepingStore()
        let first = try await world.client(device: try world.device(), keyStore: store).token()
        #expect(store.kept == first)
        let before = try world.allRequests()
        let relaunched = world.client(device: try world.device(), keyStore: store)
        #expect(try await relaunched.token() == first)
        #expect(try world.allRequests() == before)
        // Another attestd (or client ID) on the same store: the kept token is not its own.
        let stranger = world.client(
            configuration: AttestClient.Configuration(
                baseURL: try #require(URL(string: "http://localhost:\(world.port)")), clientID: world.integration.clientID,
                clock: world.clock.function),
            device: try world.device(), keyStore: store)
        #expect(try await stranger.token() != first)
        #expect(try world.allRequests() > before)
        world.clock.advance(3600 - 200)  // inside the renewal margin: renewed by assertion
        let renewed = try await relaunched.token()
        #expect(try renewed != first && world.requests("token", status: 200) == 2 && store.kept == renewed)
    }

    @Test("the log hook tells what happens, and never a token, key ID or debug token")
    func logHook() async throws {
        let world = try ClientWorld()
        let lines = Mutex<[String]>([])
        let store = world.keyStore()
        let client = world.client(
            configuration: AttestClient.Configuration(
                baseURL: world.baseURL, clientID: world.integration.clientID, log: { line in lines.withLock { $0.append(line) } }),
            device: try world.device(), keyStore: store)
        let token = try await client.token()
        _ = try await client.token(forcingRefresh: true)
        let logged = lines.withLock { $0.joined(separator: "\n") }
        #expect(logged.contains("new access token") && lines.withLock { $0.count } >= 2)
        let keyID = try #require(try store.load())
        #expect(!logged.contains(token.value) && !logged.contains(keyID) && !logged.contains("atk_"))
    }
}
