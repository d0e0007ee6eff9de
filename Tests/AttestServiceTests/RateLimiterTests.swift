import AttestService
import Testing

@Suite("Rate limiter")
struct RateLimiterTests {
    @Test("a bucket allows its burst, then asks to wait, then refills at its rate")
    func bucket() {
        let limiter = RateLimiter()
        let limit = RateLimit(perSecond: 2, burst: 3)
        for _ in 0..<3 { #expect(limiter.take(.address("a"), limit: limit, now: 100) == nil) }
        #expect(limiter.take(.address("a"), limit: limit, now: 100) == 1)
        #expect(limiter.take(.address("a"), limit: limit, now: 100.5) == nil)
        #expect(limiter.take(.address("b"), limit: limit, now: 100) == nil)
        #expect(limiter.take(.address("a"), limit: .unlimited, now: 100) == nil)
    }

    @Test("keys of different kinds never share a bucket")
    func typedKeys() {
        let limiter = RateLimiter()
        let limit = RateLimit(perSecond: 1, burst: 1)
        #expect(limiter.take(.challenges(clientID: "clid_x"), limit: limit, now: 0) == nil)
        #expect(limiter.take(.address("clid_x"), limit: limit, now: 0) == nil)
        #expect(limiter.take(.challenges(clientID: "clid_x"), limit: limit, now: 0) != nil)
    }

    @Test("spraying addresses evicts old address buckets but never resets an integration's bucket")
    func addressSprayKeepsIntegrationLimits() {
        let limiter = RateLimiter(maximumAddresses: 100)
        let limit = RateLimit(perSecond: 1, burst: 2)
        #expect(limiter.take(.challenges(clientID: "clid_x"), limit: limit, now: 0) == nil)
        #expect(limiter.take(.challenges(clientID: "clid_x"), limit: limit, now: 0) == nil)
        for index in 0..<1_000 { _ = limiter.take(.address("10.0.\(index / 256).\(index % 256)"), limit: limit, now: Double(index) / 1e6) }
        #expect(limiter.addressBucketCount <= 100)
        #expect(limiter.take(.challenges(clientID: "clid_x"), limit: limit, now: 0.001) != nil)
    }
}

@Suite("Rate limiter: several limits at once")
struct RateLimiterAllOfTests {
    @Test("takes from every bucket only when all allow; otherwise none is charged and the longest wait is returned")
    func allOrNothing() {
        let limiter = RateLimiter()
        let integration = RateLimit(perSecond: 1, burst: 3)
        let address = RateLimit(perSecond: 0.5, burst: 1)
        let both: [(key: RateLimitKey, limit: RateLimit)] = [(.challenges(clientID: "clid_x"), integration), (.address("a"), address)]
        #expect(limiter.take(both, now: 0) == nil)
        for _ in 0..<20 { #expect(limiter.take(both, now: 0) == 2) }
        // The integration's bucket still holds the two tokens the refused requests did not take.
        #expect(limiter.take([(.challenges(clientID: "clid_x"), integration), (.address("b"), address)], now: 0) == nil)
        #expect(limiter.take([(.challenges(clientID: "clid_x"), integration), (.address("c"), address)], now: 0) == nil)
        #expect(limiter.take([(.challenges(clientID: "clid_x"), integration), (.address("d"), address)], now: 0) == 1)
        #expect(limiter.take([(.address("e"), .unlimited)], now: 0) == nil)
    }
}
