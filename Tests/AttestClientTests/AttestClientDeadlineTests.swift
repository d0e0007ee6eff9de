import AttestTesting
import Foundation
import Glibc
import Testing

@testable import AttestClient

/// Calls that end by their deadline, on the world's manual clock.
@Suite("AttestClient: a call ends by its deadline")
struct AttestClientDeadlineTests {
    @Test("a client whose key's turn never comes (another process holds the lock file) ends its call within its deadline")
    func turnWaitEnds() async throws {
        let world = try ClientWorld()
        let store = world.keyStore()
        let lockFile = try #require(store.coordination.lockFile)
        try FileManager.default.createDirectory(at: lockFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        let descriptor = open(lockFile.path, O_RDWR | O_CREAT, 0o600)
        #expect(descriptor >= 0 && flock(descriptor, LOCK_EX) == 0)
        defer { close(descriptor) }
        let client = world.client(
            configuration: AttestClient.Configuration(
                baseURL: world.baseURL, clientID: world.integration.clientID, retryBudget: 1, requestTimeout: 1),
            device: try world.device(), keyStore: store)
        let start = world.uptime.now()
        await #expect {
            _ = try await client.token()
        } throws: { error in
            guard case .transport(let text)? = error as? AttestClientError else { return false }
            return text.contains("did not finish")
        }
        #expect(world.uptime.now() - start <= 1 + 1 + 0.05)  // the budget and one request's timeout, on the client's clock
        #expect(try world.requests("challenge") == 0)
    }

    @Test("no key is attested with under a second of the call left: Apple attests a key once, and it could not be sent")
    func noAttestationWithoutTime() async throws {
        let world = try ClientWorld()
        let client = world.client(
            configuration: AttestClient.Configuration(
                baseURL: world.baseURL, clientID: world.integration.clientID, retryBudget: 0, requestTimeout: 0.8),
            device: try world.device(), keyStore: world.keyStore())
        await #expect {
            _ = try await client.token()
        } throws: { error in
            guard case .transport(let text)? = error as? AttestClientError else { return false }
            return text.contains("too little")
        }
        #expect(try world.requests("attest") == 0)
    }
}
