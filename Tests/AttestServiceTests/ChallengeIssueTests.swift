import AttestStorage
import Testing

@testable import AttestService

/// Issuing a challenge in one store statement once this node has seen the integration active
/// (`ActiveIntegrationHints`): the hint saves a read, never decides anything.
@Suite("Challenge issue")
struct ChallengeIssueTests {
    @Test("an integration seen active, then suspended, resumed or revoked, is answered as the store says now, and forgotten when refused")
    func stateChangesAfterTheHint() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let clientID = world.integration.clientID
        _ = try world.challenge()
        #expect(world.service.activeHints.contains(clientID))
        #expect(try world.admin.setSuspended(clientID: clientID, true) == true)
        #expect(serviceError { try world.challenge() }?.code == .integrationSuspended)
        #expect(!world.service.activeHints.contains(clientID))
        #expect(try world.admin.setSuspended(clientID: clientID, false) == true)
        _ = try world.challenge()
        _ = try world.challenge()
        #expect(world.service.activeHints.contains(clientID))
        _ = try world.admin.revoke(clientID: clientID)
        #expect(serviceError { try world.challenge() }?.code == .integrationRevoked)
        #expect(serviceError { try world.challenge() }?.code == .integrationRevoked)
        #expect(!world.service.activeHints.contains(clientID))
    }

    @Test(
        "after a revocation, an address's further challenges are refused as revoked, not rate limited: only an active integration is charged"
    )
    func revokedIsNotCharged() throws {
        var policy = ServicePolicy()
        policy.perAddress = RateLimit(perSecond: 1, burst: 3)
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        _ = try world.service.issueChallenge(clientID: world.clientID, from: "10.0.0.1")
        _ = try world.admin.revoke(clientID: world.integration.clientID)
        for _ in 0..<10 {
            #expect(
                serviceError { try world.service.issueChallenge(clientID: world.clientID, from: "10.0.0.1") }?.code
                    == .integrationRevoked)
        }
    }

    @Test("client IDs that do not exist are never remembered and never get a rate-limit bucket")
    func unknownIDsReachNothing() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        for index in 0..<50 {
            #expect(
                serviceError { try world.service.issueChallenge(clientID: ClientID.unknown(index), from: "127.0.0.1") }?.code
                    == .integrationNotFound)
        }
        #expect(world.service.activeHints.count == 0)
        #expect(world.service.limiter.integrationBucketCount == 0)
        _ = try world.challenge()
        #expect(world.service.activeHints.count == 1)
        #expect(world.service.limiter.integrationBucketCount == 1)
    }

    @Test("the hints hold at most their capacity; past it a client ID is simply not remembered")
    func hintsBounded() {
        let hints = ActiveIntegrationHints(capacity: 2)
        for id in ["clid_a", "clid_b", "clid_c"] { hints.remember(id) }
        #expect(hints.count == 2)
        #expect(!hints.contains("clid_c"))
        hints.forget("clid_a")
        hints.remember("clid_c")
        #expect(hints.contains("clid_c"))
    }
}
