import AttestObservability
package import AttestService
internal import Glibc
import Synchronization

/// Prometheus counters and histograms for the HTTP API, rendered in the text exposition format.
package final class Metrics: Sendable, ServiceObserver {
    /// Upper bounds of the fraud-risk metric histogram (keys a device attested for the app in 30 days).
    static let riskBuckets: [Int] = [1, 2, 3, 5, 10, 20, 50, 100]

    /// Upper bounds of the latency histogram, seconds.
    static let latencyBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

    private struct Histogram {
        var counts = [UInt64](repeating: 0, count: Metrics.latencyBuckets.count)
        var sum: Double = 0
        var count: UInt64 = 0

        mutating func record(_ seconds: Double) {
            for (index, bound) in Metrics.latencyBuckets.enumerated() where seconds <= bound { counts[index] += 1 }
            sum += seconds
            count += 1
        }

        mutating func add(_ other: Histogram) {
            for index in counts.indices { counts[index] += other.counts[index] }
            sum += other.sum
            count += other.count
        }
    }

    /// Request counts and latencies, kept in several shards that the workers pick by thread, so
    /// that every request's bookkeeping does not queue on one lock (contended under load,
    /// docs/BENCHMARKS.md); a scrape adds the shards up.
    private final class RequestShard: Sendable {
        struct Counts {
            var requests: [RequestKey: UInt64] = [:]
            var latency: [String: Histogram] = [:]
        }
        let counts = Mutex(Counts())
    }
    private let requestShards = (0..<8).map { _ in RequestShard() }

    /// The calling thread's shard (a hash of its pthread_t, whose low bits are alike).
    private var threadShard: RequestShard {
        let hash = UInt64(pthread_self()) &* 0x9E37_79B9_7F4A_7C15
        return requestShards[Int(hash >> 61) % requestShards.count]
    }

    private struct RequestKey: Hashable, Comparable {
        let route: String
        let status: Int
        static func < (lhs: RequestKey, rhs: RequestKey) -> Bool { (lhs.route, lhs.status) < (rhs.route, rhs.status) }
    }

    private struct OutcomeKey: Hashable, Comparable {
        let kind: String
        let outcome: String
        static func < (lhs: OutcomeKey, rhs: OutcomeKey) -> Bool { (lhs.kind, lhs.outcome) < (rhs.kind, rhs.outcome) }
    }

    private struct IntegrationKey: Hashable, Comparable {
        let clientID: String
        let kind: String
        let result: String
        static func < (lhs: IntegrationKey, rhs: IntegrationKey) -> Bool {
            (lhs.clientID, lhs.kind, lhs.result) < (rhs.clientID, rhs.kind, rhs.result)
        }
    }

    private struct State {
        var outcomes: [OutcomeKey: UInt64] = [:]
        var integrations: [IntegrationKey: UInt64] = [:]
        var storageErrors: [String: UInt64] = [:]
        var refusedConnections: UInt64 = 0
        var receipts: [String: UInt64] = [:]
        var risk: [String: (counts: [UInt64], sum: Int, count: UInt64)] = [:]
        var tokensMinted: UInt64 = 0
        var debugTokensMinted: UInt64 = 0
        /// Debug token exchanges by outcome: `ok`, or a refusal's reason (a closed set).
        var debugExchanges: [String: UInt64] = ["ok": 0, "debug_token": 0, "rate_limited": 0]
    }

    private let state = Mutex(State())
    private let version: String
    /// The build's schema: the newest migration it knows (`BuildVersion.schema`).
    private let schema: Int
    /// The commit a release build was made from (empty for a development build).
    private let commit: String

    package init(version: String, schema: Int = 0, commit: String = "") {
        self.version = version
        self.schema = schema
        self.commit = commit
    }

    func recordRequest(route: String, status: Int, seconds: Double) {
        threadShard.counts.withLock { counts in
            counts.requests[RequestKey(route: route, status: status), default: 0] += 1
            // In place: a copy out of the dictionary would copy the bucket array on every request.
            counts.latency[route, default: Histogram()].record(seconds)
        }
    }

    /// Every shard's request counts and latencies added up.
    private func requestTotals() -> RequestShard.Counts {
        var total = RequestShard.Counts()
        for shard in requestShards {
            let counts = shard.counts.withLock { $0 }
            total.requests.merge(counts.requests, uniquingKeysWith: +)
            for (route, histogram) in counts.latency { total.latency[route, default: Histogram()].add(histogram) }
        }
        return total
    }

    /// A verification outcome (`ok` or the check that failed), and when `clientID` is that of
    /// an existing integration (as stored), its per-integration ok/failed count.
    package func verificationFinished(_ kind: VerificationKind, outcome: String, clientID integration: String?) {
        state.withLock { state in
            state.outcomes[OutcomeKey(kind: kind.rawValue, outcome: outcome), default: 0] += 1
            if let integration {
                let key = IntegrationKey(clientID: integration, kind: kind.rawValue, result: outcome == "ok" ? "ok" : "failed")
                state.integrations[key, default: 0] += 1
            }
        }
    }

    /// A receipt verdict, and its risk metric in the integration's histogram.
    package func receiptVerified(clientID: String, verdict: String, riskMetric: Int?) {
        state.withLock { state in
            state.receipts[verdict, default: 0] += 1
            guard let riskMetric else { return }
            var histogram = state.risk[clientID] ?? ([UInt64](repeating: 0, count: Metrics.riskBuckets.count), 0, 0)
            for (index, bound) in Metrics.riskBuckets.enumerated() where riskMetric <= bound { histogram.counts[index] += 1 }
            histogram.sum += riskMetric
            histogram.count += 1
            state.risk[clientID] = histogram
        }
    }

    /// A connection refused because its address held its whole per-address share.
    package func recordRefusedConnection() {
        state.withLock { $0.refusedConnections += 1 }
    }

    /// A request refused with 503 (or 500) because the storage (or the random source) failed.
    func recordStorageError(_ reason: String) {
        state.withLock { $0.storageErrors[reason, default: 0] += 1 }
    }

    package func tokenIssued(debug: Bool) {
        state.withLock { state in
            if debug { state.debugTokensMinted += 1 } else { state.tokensMinted += 1 }
        }
    }

    package func debugTokenExchanged(outcome: String, clientID: String?) {
        state.withLock { $0.debugExchanges[outcome, default: 0] += 1 }
    }

    /// The exposition text; `gauges` are sampled by the caller at scrape time.
    func render(gauges: [(name: String, help: String, value: Int)]) -> String {
        let snapshot = state.withLock { $0 }
        let requests = requestTotals()
        var out = PrometheusText()
        out.family("attestd_build_info", .gauge, help: "Build information.")
        out.sample("attestd_build_info", ["version": version, "schema": String(schema), "commit": commit], 1)
        out.family("attestd_http_requests_total", .counter, help: "HTTP requests by route and status.")
        for (key, value) in requests.requests.sorted(by: { $0.key < $1.key }) {
            out.sample("attestd_http_requests_total", ["route": key.route, "status": String(key.status)], value)
        }
        out.family(
            "attestd_verifications_total", .counter,
            help: "Attestation and assertion verifications by outcome (ok or the failed check).")
        for (key, value) in snapshot.outcomes.sorted(by: { $0.key < $1.key }) {
            out.sample("attestd_verifications_total", ["kind": key.kind, "outcome": key.outcome], value)
        }
        out.family(
            "attestd_integration_verifications_total", .counter,
            help: "Attestation and assertion verifications per registered integration, by result (ok or failed).")
        for (key, value) in snapshot.integrations.sorted(by: { $0.key < $1.key }) {
            out.sample(
                "attestd_integration_verifications_total", ["client_id": key.clientID, "kind": key.kind, "result": key.result], value)
        }
        out.family(
            "attestd_storage_errors_total", .counter,
            help: "Requests refused with 503 storage_unavailable (or 500 internal_error), by cause.")
        for (reason, value) in snapshot.storageErrors.sorted(by: { $0.key < $1.key }) {
            out.sample("attestd_storage_errors_total", ["reason": reason], value)
        }
        out.family(
            "attestd_receipts_total", .counter,
            help: "Receipts checked (at attestation and after Apple refreshed them), by result (valid or the check that failed).")
        for (result, value) in snapshot.receipts.sorted(by: { $0.key < $1.key }) {
            out.sample("attestd_receipts_total", ["result": result], value)
        }
        out.family("attestd_risk_metric", .histogram, help: "Apple's fraud-risk metric of devices' receipts, per integration.")
        for (clientID, histogram) in snapshot.risk.sorted(by: { $0.key < $1.key }) {
            out.histogram(
                "attestd_risk_metric", labels: [("client_id", clientID)], bounds: Metrics.riskBuckets.map(String.init),
                counts: histogram.counts, sum: String(histogram.sum), count: histogram.count)
        }
        out.family(
            "attestd_connections_refused_total", .counter,
            help: "Connections refused, by reason (per_address: the address held its whole share).")
        out.sample("attestd_connections_refused_total", ["reason": "per_address"], snapshot.refusedConnections)
        out.family(
            "attestd_tokens_minted_total", .counter, help: "Access tokens issued, by kind (device: attested; debug: for a debug token).")
        out.sample("attestd_tokens_minted_total", ["kind": "device"], snapshot.tokensMinted)
        out.sample("attestd_tokens_minted_total", ["kind": "debug"], snapshot.debugTokensMinted)
        out.family(
            "attestd_debug_token_exchanges_total", .counter,
            help: "POST /v1/debug-token by outcome: ok, or the refusal's reason (debug_token: unknown, expired, revoked or foreign).")
        for (outcome, value) in snapshot.debugExchanges.sorted(by: { $0.key < $1.key }) {
            out.sample("attestd_debug_token_exchanges_total", ["outcome": outcome], value)
        }
        for gauge in gauges {
            out.family(gauge.name, .gauge, help: gauge.help)
            out.sample(gauge.name, gauge.value)
        }
        out.family("attestd_http_request_duration_seconds", .histogram, help: "Request latency by route.")
        for (route, histogram) in requests.latency.sorted(by: { $0.key < $1.key }) {
            out.histogram(
                "attestd_http_request_duration_seconds", labels: [("route", route)], bounds: Metrics.latencyBuckets.map { String($0) },
                counts: histogram.counts, sum: String(histogram.sum), count: histogram.count)
        }
        return out.text
    }
}
