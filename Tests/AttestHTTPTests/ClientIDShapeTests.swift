import AttestHTTPServer
import AttestTesting
import Foundation
import Testing

@testable import AttestHTTP
@testable import AttestService

/// A client ID not of the documented shape is refused at the edge, before a rate limiter, an
/// integration hint, a metrics label or the store sees it. On PostgreSQL a NUL and anything after
/// it would otherwise have been cut by libpq and reached the real integration (decision 0020).
@Suite("client_id shape at the API edge")
struct ClientIDShapeTests {
    /// Spellings of the world's client ID that are not it, in JSON (`\u0000` is a NUL).
    static func variants(of clientID: String) -> [String] {
        [
            clientID + #"\u0000anything"#, clientID + #"\u0000"#, clientID.uppercased(), "CLID_" + clientID.dropFirst(5), clientID + "0",
            String(clientID.dropLast()), clientID + " ", " " + clientID, clientID.replacingOccurrences(of: "clid_", with: "clid-"),
            "clid_", "", #"clid_\"} 1\nattestd_up 0"#, String(repeating: "f", count: 5_000),
        ]
    }

    static func challengeRequest(_ clientID: String) -> HTTPRequest {
        ResponderTests.request("POST", "/v1/challenge", json: #"{"client_id":"\#(clientID)"}"#)
    }

    @Test(
        "refuses every other spelling with 400 client_id; no hint, no limiter bucket, no metrics label", arguments: StoreBackend.available)
    func refusesMalformed(_ backend: StoreBackend) throws {
        let world = try HTTPWorld(backend)
        let api = world.app.router
        for variant in Self.variants(of: world.integration.clientID) {
            let response = api.respond(to: Self.challengeRequest(variant))
            #expect(response.status == 400, "\(variant)")
            #expect(ResponderTests.body(response)["reason"] as? String == "client_id", "\(variant)")
        }
        #expect(world.app.service.activeHints.count == 0)
        #expect(world.app.service.limiter.integrationBucketCount == 0)
        let metrics = String(decoding: api.respond(to: ResponderTests.request("GET", "/metrics")).body, as: UTF8.self)
        #expect(!metrics.contains("anything"))
        #expect(!metrics.split(separator: "\n").contains { $0.hasPrefix("attestd_up") })
        #expect(api.respond(to: Self.challengeRequest(world.integration.clientID)).status == 200)
    }

    @Test("NUL-suffixed variants do not bypass the integration's challenge rate", arguments: StoreBackend.available)
    func variantsShareNoBucket(_ backend: StoreBackend) throws {
        let world = try HTTPWorld(backend) { $0.challengePerIntegration = RateLimit(perSecond: 0.001, burst: 3) }
        let api = world.app.router
        let clientID = world.integration.clientID
        for _ in 0..<3 { #expect(api.respond(to: Self.challengeRequest(clientID)).status == 200) }
        for index in 0..<20 {
            #expect(api.respond(to: Self.challengeRequest(clientID + #"\u0000"# + String(index))).status == 400)
        }
        let limited = api.respond(to: Self.challengeRequest(clientID))
        #expect(limited.status == 429)
        #expect(world.app.service.limiter.integrationBucketCount == 1)
    }

    @Test("a malformed client ID on attest spends the request's challenge, like any malformed field")
    func malformedOnAttestSpendsChallenge() throws {
        let world = try HTTPWorld()
        let device = try SyntheticDevice()
        let client = try world.client()
        let valid = try world.attestBody(client, device: device)
        let broken = valid.replacingOccurrences(of: world.integration.clientID, with: world.integration.clientID + #"\u0000"#)
        let refused = world.app.router.respond(to: ResponderTests.request("POST", "/v1/attest", json: broken))
        #expect(ResponderTests.body(refused)["reason"] as? String == "client_id")
        let replayed = world.app.router.respond(to: ResponderTests.request("POST", "/v1/attest", json: valid))
        #expect(ResponderTests.body(replayed)["reason"] as? String == "challenge_used")
    }

    @Test("a metrics label value cannot forge a line")
    func labelsEscaped() {
        let metrics = Metrics(version: "test\"} 1\nattestd_up 0")
        metrics.verificationFinished(.attestation, outcome: "ok", clientID: "clid_x\"} 1\nattestd_up 0")
        metrics.receiptVerified(clientID: "clid_y\n", verdict: "valid", riskMetric: 1)
        let lines = metrics.render(gauges: []).split(separator: "\n")
        #expect(!lines.contains { $0.hasPrefix("attestd_up") })
        #expect(
            lines.contains(
                #"attestd_integration_verifications_total{client_id="clid_x\"} 1\nattestd_up 0",kind="attestation",result="ok"} 1"#))
    }
}
