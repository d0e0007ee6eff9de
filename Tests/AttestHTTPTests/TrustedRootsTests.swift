import AttestCrypto
import AttestTesting
import Foundation
import Testing

/// What an operator sees of the roots a node trusts, and of test mode.
@Suite("Trusted roots on /healthz and /metrics")
struct TrustedRootsTests {
    @Test("each trusted root: its fingerprint, role, whether it is Apple's and its subject, on /healthz and /metrics")
    func rootsDescribed() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        let roots = try #require(world.json(try client.request("GET", "/healthz"))["trust_anchors"] as? [[String: Any]])
        let fingerprint = Hex.encode(world.pki.root.sha256Fingerprint)
        #expect(roots.count == 1)
        #expect(roots.first?["sha256"] as? String == fingerprint && roots.first?["role"] as? String == "primary")
        #expect(roots.first?["apple"] as? Bool == false)
        let subject = try #require(roots.first?["subject"] as? String)
        #expect(subject.contains("O=attestd test PKI"))
        let metrics = try client.request("GET", "/metrics").text
        #expect(
            metrics.contains(
                #"attestd_trust_anchor_info{sha256="\#(fingerprint)",role="primary",apple="false",subject="\#(subject)"} 1"#))
        #expect(metrics.contains("attestd_insecure_test_mode 0\n"))
    }

    @Test("Apple's own root is reported as Apple's; test mode is exported as 1 when on")
    func appleRootAndTestMode() throws {
        let apple = try HTTPWorld { $0.trustAnchorFile = nil }
        let roots = try #require(apple.json(try apple.client().request("GET", "/healthz"))["trust_anchors"] as? [[String: Any]])
        #expect(roots.first?["apple"] as? Bool == true)
        #expect((roots.first?["subject"] as? String)?.contains("Apple App Attestation Root CA") == true)
        let testing = try HTTPWorld { $0.insecureTestMode = true }
        #expect(try testing.client().request("GET", "/metrics").text.contains("attestd_insecure_test_mode 1\n"))
    }
}
