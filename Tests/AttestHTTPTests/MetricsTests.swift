import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

/// A parsed Prometheus text exposition: samples by `name{labels}`, and the declared types.
struct Exposition {
    var samples: [String: Double] = [:]
    var types: [String: String] = [:]
    var helps: Set<String> = []

    init(_ text: String) throws {
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# HELP ") {
                helps.insert(String(line.dropFirst(7).split(separator: " ")[0]))
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                types[String(parts[0])] = String(parts[1])
            } else {
                let separator = try #require(line.lastIndex(of: " "), "sample without value: \(line)")
                let value = try #require(Double(line[line.index(after: separator)...]), "bad value: \(line)")
                samples[String(line[..<separator])] = value
            }
        }
    }

    /// The family a sample belongs to (histogram samples carry _bucket, _sum, _count).
    static func family(of sample: String) -> String {
        let name = String(sample.prefix { $0 != "{" })
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) { return String(name.dropLast(suffix.count)) }
        return name
    }
}

@Suite("/metrics in the Prometheus text format")
struct MetricsTests {
    @Test("every sample has a declared type and help, values parse, and the counters move with traffic")
    func countersMove() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        let before = try Exposition(try client.request("GET", "/metrics").text)
        for sample in before.samples.keys {
            let family = Exposition.family(of: sample)
            #expect(before.types[family] != nil, "\(sample) has no TYPE")
            #expect(before.helps.contains(family), "\(sample) has no HELP")
        }
        #expect(before.types["attestd_http_request_duration_seconds"] == "histogram")
        #expect(before.types["attestd_tokens_minted_total"] == "counter")
        #expect(
            before.samples[#"attestd_build_info{version="test",schema="\#(EmbeddedMigrations.sqlite.map(\.id).max() ?? 0)",commit=""}"#]
                == 1)

        var device = try SyntheticDevice()
        let token = try world.attest(client, device: device)
        _ = try client.postJSON("/v1/token", try world.refreshBody(client, device: &device))
        _ = try world.authorize(client, token: token)
        _ = try world.authorize(client, token: "atk_bogus")
        var rejected = try SyntheticDevice()
        _ = try client.postJSON("/v1/token", try world.refreshBody(client, device: &rejected))

        world.app.refreshStatistics()  // what the purge timer does every --purge-interval
        let after = try Exposition(try client.request("GET", "/metrics").text)
        func moved(_ sample: String) -> Double { (after.samples[sample] ?? 0) - (before.samples[sample] ?? 0) }
        #expect(moved(#"attestd_tokens_minted_total{kind="device"}"#) == 2)
        #expect(moved(#"attestd_http_requests_total{route="authorize",status="200"}"#) == 1)
        #expect(moved(#"attestd_http_requests_total{route="authorize",status="401"}"#) == 1)
        #expect(moved(#"attestd_verifications_total{kind="attestation",outcome="ok"}"#) == 1)
        #expect(moved(#"attestd_verifications_total{kind="assertion",outcome="ok"}"#) == 1)
        #expect(moved(#"attestd_verifications_total{kind="assertion",outcome="signature"}"#) == 1)
        #expect(moved(#"attestd_http_request_duration_seconds_count{route="authorize"}"#) == 2)
        #expect(after.samples["attestd_active_devices"] == 1)
        #expect(after.samples["attestd_active_integrations"] == 1)
        _ = try world.admin.revoke(clientID: world.integration.clientID)
        world.app.refreshStatistics()
        let revoked = try Exposition(try client.request("GET", "/metrics").text)
        #expect(revoked.samples["attestd_revoked_integrations"] == 1)
        #expect(revoked.samples["attestd_active_integrations"] == 0)
        #expect(revoked.samples["attestd_active_devices"] == 0)
        // Histogram buckets are cumulative and end at the count.
        let buckets = after.samples.filter { $0.key.hasPrefix(#"attestd_http_request_duration_seconds_bucket{route="authorize""#) }
        #expect(buckets[#"attestd_http_request_duration_seconds_bucket{route="authorize",le="+Inf"}"#] == 2)
        #expect(buckets.values.allSatisfy { $0 <= 2 })
    }
}

@Suite("The alert rules' metrics")
struct AlertMetricsTests {
    /// Every `attestd_*` name in the shipped alert rules.
    static func namesInRules() throws -> Set<String> {
        let rules = Fixtures.directory.deletingLastPathComponent().appendingPathComponent("deploy/prometheus/attestd-alerts.yml")
        let text = try String(contentsOf: rules, encoding: .utf8)
        let pattern = try Regex(#"attestd_[a-z_]+"#)
        return Set(text.matches(of: pattern).map { String(text[$0.range]) })
    }

    @Test("every metric a shipped alert rule uses is on /metrics from the start, before any traffic or receipt refresh")
    func everyRuleMetricFromTheStart() throws {
        let names = try Self.namesInRules()
        #expect(names.count >= 10 && names.contains("attestd_receipt_refreshes_total"))
        let world = try HTTPWorld()
        let families = Set(try Exposition(try world.client().request("GET", "/metrics").text).types.keys)
        for name in names.sorted() {
            let family = Exposition.family(of: name)
            #expect(families.contains(family) || families.contains(name), "\(name) is used by a rule but not exported at start")
        }
    }
}
