import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

@Suite("The live-token cap over HTTP")
struct TokenCapTests {
    @Test(
        "with every token minted in one second, attest and five refreshes under a cap of N leave exactly the newest N authorizing",
        arguments: StoreBackend.available, [1, 2, 3])
    func capKeepsNewest(_ backend: StoreBackend, cap: Int) throws {
        let world = try HTTPWorld(backend, clock: SettableWallClock(Int64(Date().timeIntervalSince1970)))
        _ = try world.admin.update(clientID: world.integration.clientID, policy: IntegrationPolicy(), maxLiveTokensPerDevice: cap)
        let client = try world.client()
        var device = try SyntheticDevice()
        var tokens = [try world.attest(client, device: device)]
        for _ in 1...5 {
            let refreshed = try client.postJSON("/v1/token", try world.refreshBody(client, device: &device))
            #expect(refreshed.status == 200, "\(refreshed.text)")
            tokens.append(try #require(world.json(refreshed)["access_token"] as? String))
        }
        let statuses = try tokens.map { try world.authorize(client, token: $0).status }
        #expect(statuses == Array(repeating: 401, count: 6 - cap) + Array(repeating: 200, count: cap))
    }
}
