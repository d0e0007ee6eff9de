import AttestCrypto
import AttestHTTPServer
import AttestObservability
import AttestService

/// What operators and their tools call: `/healthz` (liveness), `/readyz` (readiness for load
/// balancers), `/metrics` (Prometheus); and, in `--insecure-test-mode` only, the `/test/` routes.
struct OperatorRoutes: Sendable {
    let service: TokenService
    let settings: AttestAPI.Settings
    let logger: Logger
    let metrics: Metrics
    /// The gauges, sampled at scrape time by the composition root.
    let gauges: @Sendable () -> [(name: String, help: String, value: Int)]
    /// Exposition text of other parts (the receipt refresher's counters), appended to /metrics.
    let moreMetrics: @Sendable () -> String

    func register(in group: RouteGroup) {
        group.on("GET", "/healthz", name: "healthz", quiet: true, healthz)
        group.on("GET", "/readyz", name: "readyz", quiet: true, readyz)
        group.on("GET", "/metrics", name: "metrics", quiet: true, metricsText)
        // The /test/ routes do not exist outside test mode: a production server answers 404.
        if let clock = settings.testClock {
            let test = TestModeRoutes(service: service, clock: clock, logger: logger)
            group.on("POST", "/test/clock", name: "test_clock", test.setClock)
            group.on("POST", "/test/challenge", name: "test_challenge", test.seedChallenge)
        }
    }

    /// Liveness: the process answers. Says which trust anchor, receipt exchange and storage it
    /// runs with.
    private func healthz(_ context: inout RequestContext) throws -> HTTPResponse {
        var members: [(String, any Sendable)] = [
            ("status", "ok"), ("trust_anchor", settings.trustsAppleRoot ? "apple" : "custom (test only)"),
        ]
        let anchors = settings.trustAnchorFingerprints
        if let primary = anchors.first { members.append(("trust_anchor_sha256", primary)) }
        if anchors.count > 1 { members.append(("additional_root_sha256", anchors[1])) }
        members.append(
            (
                "trust_anchors",
                JSONValue.array(
                    settings.trustedRoots.map { root in
                        JSONValue.object([("sha256", root.sha256), ("role", root.role), ("apple", root.apple), ("subject", root.subject)])
                    })
            ))
        members += [
            ("apple_receipt_url", settings.exchangesReceiptsWithApple ? "apple" : "custom (test only)"),
            ("test_mode", settings.testClock != nil), ("storage", settings.storage), ("version", settings.version),
            ("schema", settings.schema), ("commit", settings.commit),
        ]
        return JSONBody.response(members)
    }

    /// Readiness: 200 while the storage answers, 503 `storage_unavailable` with Retry-After
    /// while it does not (load balancers take the node out of rotation).
    private func readyz(_ context: inout RequestContext) throws -> HTTPResponse {
        try service.checkStorage()
        return JSONBody.response([("status", "ready"), ("storage", settings.storage)])
    }

    private func metricsText(_ context: inout RequestContext) throws -> HTTPResponse {
        HTTPResponse(
            status: 200, headers: [HTTPHeader(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")],
            body: Array((metrics.render(gauges: gauges()) + moreMetrics()).utf8))
    }
}

/// `--insecure-test-mode` only: set the clock, seed a challenge (recorded devices' client data
/// are fixed).
struct TestModeRoutes: Sendable {
    let service: TokenService
    let clock: SettableWallClock
    let logger: Logger

    func setClock(_ context: inout RequestContext) throws -> HTTPResponse {
        let fields = try RequestDecoding.jsonFields(context.request, required: [.now])
        guard let seconds = Int64(fields[.now] ?? ""), seconds >= 0 else {
            throw Problem.malformed(.field(.now), "now must be Unix seconds as a string")
        }
        clock.set(seconds)
        logger.log(.warning, "test clock set", ["test.now": .int(Int(seconds))])
        return JSONBody.response([("now", seconds)])
    }

    func seedChallenge(_ context: inout RequestContext) throws -> HTTPResponse {
        let fields = try RequestDecoding.jsonFields(context.request, required: [.clientID, .challenge])
        let clientID = try RequestDecoding.clientID(fields[.clientID] ?? "")
        guard let bytes = Base64Text.decode(fields[.challenge] ?? "", .url), let challenge = Challenge(bytes, seeded: true) else {
            throw Problem.malformed(.field(.challenge), "challenge must be base64url (no padding) of 1 to 256 bytes")
        }
        try service.seedChallenge(clientID: clientID, challenge: challenge)
        return JSONBody.response([("seeded", true)])
    }
}
