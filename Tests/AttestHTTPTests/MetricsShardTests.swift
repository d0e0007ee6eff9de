import Foundation
import Testing

@testable import AttestHTTP

@Suite("Request metrics kept per thread")
struct MetricsShardTests {
    @Test("requests recorded on sixteen threads at once add up in one scrape, counts and latency histograms alike")
    func countsAddUp() throws {
        let metrics = Metrics(version: "test")
        _ = simultaneously(16) { thread in
            for index in 0..<500 {
                metrics.recordRequest(route: "authorize", status: index % 5 == 0 ? 401 : 200, seconds: thread % 2 == 0 ? 0.002 : 0.2)
            }
        }
        let exposition = try Exposition(metrics.render(gauges: []))
        #expect(exposition.samples[#"attestd_http_requests_total{route="authorize",status="200"}"#] == 6400)
        #expect(exposition.samples[#"attestd_http_requests_total{route="authorize",status="401"}"#] == 1600)
        #expect(exposition.samples[#"attestd_http_request_duration_seconds_count{route="authorize"}"#] == 8000)
        #expect(exposition.samples[#"attestd_http_request_duration_seconds_bucket{route="authorize",le="0.0025"}"#] == 4000)
        #expect(exposition.samples[#"attestd_http_request_duration_seconds_bucket{route="authorize",le="0.25"}"#] == 8000)
        let sum = try #require(exposition.samples[#"attestd_http_request_duration_seconds_sum{route="authorize"}"#])
        #expect(abs(sum - (4000 * 0.002 + 4000 * 0.2)) < 1e-6)
    }
}
