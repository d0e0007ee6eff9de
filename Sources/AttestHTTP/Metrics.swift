import Synchronization

/// Prometheus counters and histograms for the HTTP API, rendered in the text exposition format.
package final class Metrics: Sendable {
    /// Upper bounds of the latency histogram, seconds.
    static let latencyBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

    private struct Histogram {
        var counts = [UInt64](repeating: 0, count: Metrics.latencyBuckets.count)
        var sum: Double = 0
        var count: UInt64 = 0
    }

    private struct State {
        var requests: [String: UInt64] = [:]  // "route\u{0}status"
        var outcomes: [String: UInt64] = [:]  // "kind\u{0}code"
        var tokensMinted: UInt64 = 0
        var latency: [String: Histogram] = [:]
    }

    private let state = Mutex(State())
    private let version: String

    package init(version: String) {
        self.version = version
    }

    func recordRequest(route: String, status: Int, seconds: Double) {
        state.withLock { state in
            state.requests["\(route)\u{0}\(status)", default: 0] += 1
            var histogram = state.latency[route] ?? Histogram()
            for (index, bound) in Metrics.latencyBuckets.enumerated() where seconds <= bound { histogram.counts[index] += 1 }
            histogram.sum += seconds
            histogram.count += 1
            state.latency[route] = histogram
        }
    }

    /// A verification outcome: kind is `attestation` or `assertion`, code is `ok` or the check that failed.
    func recordOutcome(kind: String, code: String) {
        state.withLock { $0.outcomes["\(kind)\u{0}\(code)", default: 0] += 1 }
    }

    func recordTokenMinted() {
        state.withLock { $0.tokensMinted += 1 }
    }

    /// The exposition text; `gauges` are sampled by the caller at scrape time.
    func render(gauges: [(name: String, help: String, value: Int)]) -> String {
        let snapshot = state.withLock { $0 }
        var lines: [String] = []
        lines += [
            "# HELP attestd_build_info Build information.", "# TYPE attestd_build_info gauge",
            "attestd_build_info{version=\"\(version)\"} 1",
        ]
        lines += ["# HELP attestd_http_requests_total HTTP requests by route and status.", "# TYPE attestd_http_requests_total counter"]
        for (key, value) in snapshot.requests.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "\u{0}", omittingEmptySubsequences: false)
            lines.append("attestd_http_requests_total{route=\"\(parts[0])\",status=\"\(parts[1])\"} \(value)")
        }
        lines += [
            "# HELP attestd_verifications_total Attestation and assertion verifications by outcome (ok or the failed check).",
            "# TYPE attestd_verifications_total counter",
        ]
        for (key, value) in snapshot.outcomes.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "\u{0}", omittingEmptySubsequences: false)
            lines.append("attestd_verifications_total{kind=\"\(parts[0])\",outcome=\"\(parts[1])\"} \(value)")
        }
        lines += [
            "# HELP attestd_tokens_minted_total Access tokens issued.", "# TYPE attestd_tokens_minted_total counter",
            "attestd_tokens_minted_total \(snapshot.tokensMinted)",
        ]
        for gauge in gauges {
            lines += ["# HELP \(gauge.name) \(gauge.help)", "# TYPE \(gauge.name) gauge", "\(gauge.name) \(gauge.value)"]
        }
        lines += [
            "# HELP attestd_http_request_duration_seconds Request latency by route.",
            "# TYPE attestd_http_request_duration_seconds histogram",
        ]
        for (route, histogram) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            for (index, bound) in Metrics.latencyBuckets.enumerated() {
                lines.append("attestd_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(bound)\"} \(histogram.counts[index])")
            }
            lines.append("attestd_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(histogram.count)")
            lines.append("attestd_http_request_duration_seconds_sum{route=\"\(route)\"} \(histogram.sum)")
            lines.append("attestd_http_request_duration_seconds_count{route=\"\(route)\"} \(histogram.count)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
