import AttestClient
import AttestClientSimulator
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The surface docs/CLIENT.md documents, used as an app would: only `import AttestClient` (and the
/// simulator), the names and signatures it lists, nothing of the package's own. It fails to
/// compile when one of them changes; the exhaustive switch fails when an error case is added.
@Suite("The public surface, as an app writes against it")
struct PublicSurfaceTests {
    /// The app's own key store, in memory.
    final class MemoryKeyIDStore: KeyIDStore, @unchecked Sendable {
        // @unchecked: `keyID` is read and written only while holding `lock`.
        private let lock = NSLock()
        private var keyID: String?

        func load() throws -> String? {
            lock.lock()
            defer { lock.unlock() }
            return keyID
        }

        func save(_ keyID: String) throws {
            lock.lock()
            defer { lock.unlock() }
            self.keyID = keyID
        }

        func remove() throws {
            lock.lock()
            defer { lock.unlock() }
            keyID = nil
        }
    }

    /// What the app shows for each error.
    static func advice(_ error: AttestClientError) -> String {
        switch error {
        case .unsupportedDevice: "fallback"
        case .integrationNotFound: "configuration"
        case .integrationRevoked: "stop"
        case .integrationSuspended: "later"
        case .deviceBlocked: "blocked"
        case .rateLimited(let retryAfter): "after \(retryAfter ?? 0)"
        case .serviceUnavailable(let retryAfter): "after \(retryAfter ?? 0)"
        case .rejected(let status, let code, let reason): "\(status) \(code) \(reason)"
        case .transport(let text): text
        case .hostNotAllowed(let host): "not to \(host)"
        }
    }

    @Test("an app's few lines: a configuration with the default clock, a simulated device, its own key store, token and authorize")
    func appLines() async throws {
        let world = try ClientWorld(network: true)
        let device: any AppAttestDevice = try SimulatedAppAttestDevice(
            stateDirectory: world.stateDirectory, teamID: ClientWorld.teamID, bundleID: ClientWorld.bundleID)
        let configuration = AttestClient.Configuration(
            baseURL: world.baseURL, clientID: world.integration.clientID, apiHosts: ["127.0.0.1"])
        let client = AttestClient(configuration: configuration, device: device, keyStore: MemoryKeyIDStore())

        let token: AccessToken = try await client.token()
        let request: URLRequest = try await client.authorize(URLRequest(url: world.baseURL.appendingPathComponent("v1/authorize")))

        #expect(token.expiresAt > Date())
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer \(token.value)")
        #expect(AccessToken(value: token.value, expiresAt: token.expiresAt) == token)
        #expect(Self.advice(.rejected(status: 400, code: "malformed_request", reason: "client_id")) == "400 malformed_request client_id")
        #expect(try await client.token() == token)
        #expect(try world.requests("attest") == 1)
    }
}
