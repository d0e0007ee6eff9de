import AttestCore
import AttestService
import AttestTesting
import Testing

/// Who may spend an integration's budgets (decisions 0009 and 0010): only requests that every limit
/// in their way allows, and for new keys only attestations that verified.
@Suite("Rate-limit budgets")
struct RateLimitBudgetTests {
    @Test("junk attestations with fresh, usable challenges leave the new-key budget to genuine devices")
    func junkAttestationsSpendNoNewKeyBudget() throws {
        var policy = ServicePolicy()
        policy.perAddress = .unlimited
        policy.attestPerIntegration = RateLimit(perSecond: 1, burst: 2)
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        for index in 0..<10 {
            // A fresh challenge from the public client ID and a genuine-looking object whose key
            // ID is another key's: it fails verification after the challenge was found usable.
            var junk = try world.attestRequest(try SyntheticDevice())
            junk.keyID = try #require(KeyID(try SyntheticDevice().keyID))
            #expect(serviceError { try world.service.attest(junk, from: "10.0.0.\(index)") }?.code == .attestationRejected)
        }
        _ = try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1")
        _ = try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1")
        // Verified attestations are still charged: the budget holds for genuine ones.
        let third = serviceError { try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1") }
        #expect(third?.code == .rateLimited)
    }

    @Test("an address held to its own limit spends nothing of its integration's challenge budget")
    func addressOverItsLimitSpendsNoIntegrationBudget() throws {
        var policy = ServicePolicy()
        policy.perAddress = RateLimit(perSecond: 1, burst: 2)
        policy.challengePerIntegration = RateLimit(perSecond: 1, burst: 10)
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        var refused = 0
        for _ in 0..<50 {
            if serviceError({ try world.service.issueChallenge(clientID: world.clientID, from: "10.0.0.1") })?.code == .rateLimited {
                refused += 1
            }
        }
        #expect(refused == 48)
        // The integration's bucket lost only the two challenges the address was allowed.
        for index in 0..<8 { _ = try world.service.issueChallenge(clientID: world.clientID, from: "10.0.1.\(index)") }
        let limited = serviceError { try world.service.issueChallenge(clientID: world.clientID, from: "10.0.2.1") }
        #expect(limited?.code == .rateLimited)
    }
}
