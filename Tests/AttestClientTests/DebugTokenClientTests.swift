import AttestClient
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

/// A client made with a debug token: the Simulator's, a preview's or CI's, against a real attestd.
@Suite("AttestClient with a debug token")
struct DebugTokenClientTests {
    /// A debug token made for the world's integration, as an admin would; its ID and secret.
    static func debugToken(_ world: ClientWorld, clientID: String? = nil) throws -> (admin: WorkspaceAdmin, id: String, secret: String) {
        let admin = WorkspaceAdmin(store: try world.location.open(at: 0, connections: 1))
        let issued = try admin.createDebugToken(
            clientID: clientID ?? world.integration.clientID, name: "CI", lifetime: 86_400, actor: "test")
        return (admin, issued.record.id, issued.secret)
    }

    static func client(_ world: ClientWorld, _ secret: String, retryBudget: TimeInterval = 30) -> AttestClient {
        world.client(device: nil, keyStore: nil, retryBudget: retryBudget, debugToken: secret)
    }

    @Test("token() exchanges the debug token once for many callers, the token authorizes as debug, and renewal exchanges again")
    func exchanges() async throws {
        let world = try ClientWorld()
        let (_, _, secret) = try Self.debugToken(world)
        let client = Self.client(world, secret)
        let tokens = try await withThrowingTaskGroup(of: AccessToken.self) { group in
            for _ in 0..<20 { group.addTask { try await client.token() } }
            return try await group.reduce(into: [AccessToken]()) { $0.append($1) }
        }
        #expect(Set(tokens.map(\.value)).count == 1 && tokens[0].value.hasPrefix("atk_"))
        #expect(try world.requests("debug_token", status: 200) == 1)
        #expect(try world.requests("challenge") == 0 && world.requests("attest") == 0)
        let authorized = world.respond("GET", "/v1/authorize", bearer: tokens[0].value)
        #expect(authorized.status == 200 && authorized.headers.contains { $0.name == "Attest-Debug" && $0.value == "true" })
        #expect(try await client.token() == tokens[0])
        #expect(try world.requests("debug_token") == 1)
        world.clock.advance(3600 - 299)  // inside the 5-minute renewal margin
        let renewed = try await client.token()
        #expect(try renewed != tokens[0] && world.requests("debug_token", status: 200) == 2)
    }

    @Test("an unknown, another integration's or a revoked debug token throws rejected 401 invalid_debug_token at once, unretried")
    func refusals() async throws {
        let world = try ClientWorld()
        let other = try world.admin.create(
            workspaceID: "ws_client", name: "Other", teamID: ClientWorld.teamID, bundleIDs: [ClientWorld.bundleID],
            environments: [.production])
        let (_, _, foreign) = try Self.debugToken(world, clientID: try #require(other.issuedClientID).text)
        let (admin, id, secret) = try Self.debugToken(world)
        let working = Self.client(world, secret)
        let first = try await working.token()
        #expect(try admin.revokeDebugToken(id: id, actor: "test") == .revoked(tokens: 1))
        let expected = AttestClientError.rejected(status: 401, code: "invalid_debug_token", reason: "debug_token")
        for (client, label) in [
            (Self.client(world, "dbg_" + String(repeating: "A", count: 43)), "unknown"), (Self.client(world, foreign), "foreign"),
            (working, "revoked"),
        ] {
            let before = try world.requests("debug_token")
            await #expect(throws: expected, "\(label)") { _ = try await client.token(forcingRefresh: true) }
            #expect(try world.requests("debug_token") == before + 1, "\(label): one request, no retry")
        }
        #expect(world.respond("GET", "/v1/authorize", bearer: first.value).status == 401)
    }

    @Test("a suspended integration throws integrationSuspended; a stopped attestd is retried within the budget, then transport")
    func outages() async throws {
        let world = try ClientWorld()
        let (_, _, secret) = try Self.debugToken(world)
        _ = try world.admin.setSuspended(clientID: world.integration.clientID, true)
        await #expect(throws: AttestClientError.integrationSuspended) { _ = try await Self.client(world, secret).token() }
        _ = try world.admin.setSuspended(clientID: world.integration.clientID, false)
        try world.stop()
        let client = Self.client(world, secret, retryBudget: 1)
        await #expect {
            _ = try await client.token()
        } throws: { error in
            guard case .transport? = error as? AttestClientError else { return false }
            return true
        }
        try world.start()
        #expect(try await client.token().value.hasPrefix("atk_"))
    }
}
