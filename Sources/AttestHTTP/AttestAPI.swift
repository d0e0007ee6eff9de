import AttestCore
import AttestCrypto
package import AttestHTTPServer
package import AttestService
import Foundation
import Synchronization

/// The HTTP API of attestd (docs/API.md): one table of routes to handlers, request decoding,
/// problem documents, metrics and one log line per request. All decisions are the `TokenService`'s.
package struct AttestAPI: HTTPResponder {
    /// What the API needs besides the service.
    package struct Settings: Sendable {
        /// The credentials `/v1/introspect` callers present as `Authorization: Bearer`; nil
        /// refuses every introspection (401).
        package var gatewaySecrets: GatewaySecrets?
        /// False when a test or demo trust anchor replaces Apple's root (reported by /healthz).
        package var trustsAppleRoot: Bool
        package var version: String
        /// The storage kind reported by /healthz and /readyz (`sqlite` or `postgresql`).
        package var storage: String
        /// Set only in `--insecure-test-mode`: enables the /test/ routes.
        package var testClock: SettableWallClock?
        /// Proxies (CIDR) whose `X-Forwarded-For` names the client (`--trusted-proxy`).
        package var trustedProxies: [String]
        /// Whether challenges and attestations are limited per client address (`--address-rate` > 0).
        package var limitsPerAddress: Bool
        /// One in N successful authorize and introspect lines is logged (1: all, 0: none).
        package var logSuccessEvery = 1

        package init(
            gatewaySecrets: GatewaySecrets?, trustsAppleRoot: Bool, version: String, storage: String = "sqlite",
            testClock: SettableWallClock? = nil, trustedProxies: [String] = [], limitsPerAddress: Bool = true, logSuccessEvery: Int = 1
        ) {
            self.gatewaySecrets = gatewaySecrets
            self.trustsAppleRoot = trustsAppleRoot
            self.version = version
            self.storage = storage
            self.testClock = testClock
            self.trustedProxies = trustedProxies
            self.limitsPerAddress = limitsPerAddress
            self.logSuccessEvery = logSuccessEvery
        }
    }

    /// The routes, by the name used in metrics and logs.
    enum RouteName: String, Sendable {
        case challenge, attest, token, introspect, revoke, authorize, healthz, readyz, metrics
        case testClock = "test_clock"
        case testChallenge = "test_challenge"
        /// No route matched (404).
        case unknown

        /// Routes whose successful requests are not logged one line each (probes and scrapes).
        var isQuiet: Bool { self == .metrics || self == .healthz || self == .readyz }
    }

    /// One endpoint: its method (HEAD is served wherever GET is) and its handler.
    struct Route: Sendable {
        let method: String
        let name: RouteName
        let handler: @Sendable (AttestAPI) -> (HTTPRequest, inout RequestLog) throws(Problem) -> HTTPResponse
    }

    /// What a request's log line says besides route and status.
    struct RequestLog {
        /// The client ID as the request gave it, cut to 64 bytes: a client ID is at most 64
        /// characters, and an unbounded one must not make an unbounded log line.
        var clientID: String? {
            get { storedClientID }
            set {
                storedClientID = newValue.map {
                    $0.utf8.count <= 64 ? $0 : String(decoding: Array($0.utf8.prefix(64)), as: UTF8.self) + "..."
                }
            }
        }
        private var storedClientID: String?
        var outcome: String?
        /// The client's address: the TCP peer, or what a trusted proxy forwarded.
        var client = ""
    }

    /// The API's endpoints.
    static let routes: [String: Route] = [
        "/v1/challenge": Route(method: "POST", name: .challenge, handler: { $0.challenge }),
        "/v1/attest": Route(method: "POST", name: .attest, handler: { $0.attest }),
        "/v1/token": Route(method: "POST", name: .token, handler: { $0.token }),
        "/v1/introspect": Route(method: "POST", name: .introspect, handler: { $0.introspect }),
        "/v1/revoke": Route(method: "POST", name: .revoke, handler: { $0.revoke }),
        "/v1/authorize": Route(method: "GET", name: .authorize, handler: { $0.authorize }),
        "/healthz": Route(method: "GET", name: .healthz, handler: { $0.healthz }),
        "/readyz": Route(method: "GET", name: .readyz, handler: { $0.readyz }),
        "/metrics": Route(method: "GET", name: .metrics, handler: { $0.metricsText }),
    ]

    /// Endpoints that exist only in `--insecure-test-mode`.
    static let testRoutes: [String: Route] = [
        "/test/clock": Route(method: "POST", name: .testClock, handler: { $0.setTestClock }),
        "/test/challenge": Route(method: "POST", name: .testChallenge, handler: { $0.seedChallenge }),
    ]

    let service: TokenService
    let settings: Settings
    let logger: Logger
    package let metrics: Metrics
    let gauges: @Sendable () -> [(name: String, help: String, value: Int)]
    /// Exposition text of other parts (the receipt refresher's counters), appended to /metrics.
    let moreMetrics: @Sendable () -> String
    private let table: [String: Route]
    private let requestCounter = RequestCounter()
    private let clientAddress: ClientAddress
    /// Counts successful gateway requests, for `logSuccessEvery`.
    private let gatewaySuccesses = RequestCounter()
    /// Set once the untrusted-proxy warning has been logged.
    private let warnedAboutProxy = OnceFlag()

    package init(
        service: TokenService, settings: Settings, logger: Logger, metrics: Metrics? = nil,
        gauges: @escaping @Sendable () -> [(name: String, help: String, value: Int)] = { [] },
        moreMetrics: @escaping @Sendable () -> String = { "" }
    ) {
        self.service = service
        self.settings = settings
        self.logger = logger
        self.metrics = metrics ?? Metrics(version: settings.version)
        self.gauges = gauges
        self.moreMetrics = moreMetrics
        // The /test/ routes do not exist outside test mode: a production server answers 404.
        table = settings.testClock == nil ? Self.routes : Self.routes.merging(Self.testRoutes) { first, _ in first }
        clientAddress = ClientAddress(trustedProxies: settings.trustedProxies.compactMap(IPNetwork.init))
    }

    /// The client's address for limits and logs, warning once when a proxy on this host forwards
    /// requests that attestd does not trust it for: then every client shares the proxy's bucket.
    private func client(of request: HTTPRequest) -> String {
        let forwarded = request.headerValues("X-Forwarded-For")
        let address = clientAddress.of(peer: request.remoteAddress, forwardedFor: forwarded)
        if settings.limitsPerAddress, !forwarded.isEmpty, address == request.remoteAddress,
            ["127.0.0.1", "::1"].contains(request.remoteAddress), warnedAboutProxy.setFirstTime()
        {
            logger.log(
                .warning,
                "requests arrive through a proxy on this host (X-Forwarded-For) while --address-rate limits per address: every client "
                    + "shares the proxy's bucket; run with --address-rate 0 (and limit at the proxy) or --trusted-proxy \(request.remoteAddress)",
                ["remote": .string(request.remoteAddress)])
        }
        return address
    }

    package func respond(to request: HTTPRequest) -> HTTPResponse {
        let started = ContinuousClock.now
        // The proxy's ID (nginx's $request_id) when it sent a sane one, so both logs correlate.
        let requestID = RequestCounter.forwarded(request.header("X-Request-Id")) ?? requestCounter.next()
        var log = RequestLog()
        log.client = client(of: request)
        let route = table[request.path]
        var response: HTTPResponse
        do throws(Problem) {
            guard let route else { throw Problem(.notFound, .notFound, "no such endpoint") }
            guard request.method == route.method || (route.method == "GET" && request.method == "HEAD") else {
                throw Problem(
                    .methodNotAllowed, .methodNotAllowed, "\(request.path) takes \(route.method)",
                    headers: [HTTPHeader(name: "Allow", value: route.method)])
            }
            response = try route.handler(self)(request, &log)
        } catch {
            response = failure(error, &log)
        }
        response.headers.append(HTTPHeader(name: "X-Request-Id", value: requestID))
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let name = route?.name ?? .unknown
        metrics.recordRequest(route: name.rawValue, status: response.status, seconds: seconds)
        if (!name.isQuiet || response.status >= 500) && logs(name, response.status) {
            var fields: [(String, LogValue)] = [
                ("request.id", .string(requestID)), ("route", .string(name.rawValue)), ("status", .int(response.status)),
                ("duration_ms", .double((seconds * 1e6).rounded() / 1e3)), ("outcome", .string(log.outcome ?? "ok")),
            ]
            if let clientID = log.clientID { fields.append(("client.id", .string(clientID))) }
            fields.append(("remote", .string(log.client)))
            logger.log(response.status >= 500 ? .error : .info, "request", fields: fields)
        }
        return response
    }

    /// Whether this request's line is written: every failure is; successful authorize and
    /// introspect lines (the bulk of a busy gateway's traffic) only one in `logSuccessEvery`.
    private func logs(_ route: RouteName, _ status: Int) -> Bool {
        guard status < 400, route == .authorize || route == .introspect, settings.logSuccessEvery != 1 else { return true }
        guard settings.logSuccessEvery > 0 else { return false }
        return gatewaySuccesses.count() % UInt64(settings.logSuccessEvery) == 0
    }

    /// The one place a refusal becomes a response: the outcome for the log line, and for a
    /// storage or internal failure its own message in the log and a count in the metrics.
    private func failure(_ problem: Problem, _ log: inout RequestLog) -> HTTPResponse {
        log.outcome = problem.subcode.identifier
        if let internalReason = problem.internalReason {
            metrics.recordStorageError(problem.subcode.identifier)
            logger.log(
                .error, problem.code == .service(.storageUnavailable) ? "storage unavailable" : "internal error",
                ["detail": .string(internalReason)])
        }
        return problem.response
    }

    // MARK: Device endpoints

    private func challenge(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        let fields = try RequestDecoding.jsonFields(request, required: [.clientID])
        let clientID = fields[.clientID] ?? ""
        log.clientID = clientID
        let issued = try serviceCall { () throws(ServiceError) in
            try service.issueChallenge(clientID: clientID, from: log.client)
        }
        return JSONBody.response([("challenge", issued.challenge), ("expires_in", issued.expiresIn)])
    }

    private func attest(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        let fields = try RequestDecoding.jsonFields(request, required: [.clientID, .keyID, .attestation, .challenge])
        let clientID = fields[.clientID] ?? ""
        log.clientID = clientID
        let token = try verified(.attestation, clientID: clientID) { () throws(ServiceError) -> IssuedToken in
            let challenge = try RequestDecoding.challenge(fields[.challenge] ?? "", seeded: settings.testClock != nil)
            let (keyID, object) = try spendingOnFailure(challenge) { () throws(ServiceError) in
                (
                    try RequestDecoding.keyID(fields[.keyID] ?? ""),
                    try RequestDecoding.object(fields[.attestation] ?? "", .attestation, limit: AttestationObject.maximumSize)
                )
            }
            return try service.attest(
                AttestRequest(clientID: clientID, keyID: keyID, attestation: object, challenge: challenge), from: log.client)
        }
        return tokenResponse(token)
    }

    private func token(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        let fields = try RequestDecoding.jsonFields(request, required: [.clientID, .keyID, .assertion, .challenge])
        let clientID = fields[.clientID] ?? ""
        log.clientID = clientID
        let token = try verified(.assertion, clientID: clientID) { () throws(ServiceError) -> IssuedToken in
            let challenge = try RequestDecoding.challenge(fields[.challenge] ?? "", seeded: settings.testClock != nil)
            let (keyID, object) = try spendingOnFailure(challenge) { () throws(ServiceError) in
                (
                    try RequestDecoding.keyID(fields[.keyID] ?? ""),
                    try RequestDecoding.object(fields[.assertion] ?? "", .assertion, limit: AssertionObject.maximumSize)
                )
            }
            return try service.refresh(
                RefreshRequest(clientID: clientID, keyID: keyID, assertion: object, challenge: challenge), from: log.client)
        }
        return tokenResponse(token)
    }

    /// Decodes the other fields of a request whose challenge was well formed; if one is
    /// malformed, the challenge is spent before the 400 (spent on first presentation).
    private func spendingOnFailure<T>(_ challenge: Challenge, _ decode: () throws(ServiceError) -> T) throws(ServiceError) -> T {
        do {
            return try decode()
        } catch {
            try service.spend(challenge)
            throw error
        }
    }

    private func tokenResponse(_ token: IssuedToken) -> HTTPResponse {
        metrics.recordTokenMinted()
        return JSONBody.response([
            ("access_token", token.accessToken), ("token_type", "Bearer"), ("expires_in", token.expiresIn), ("scope", token.scope),
            ("workspace_id", token.workspaceID),
        ])
    }

    /// Runs a verification, recording its outcome in the metrics: overall, and per integration
    /// once the outcome shows that the client ID names a real integration.
    private func verified(
        _ kind: Metrics.VerificationKind, clientID: String, _ body: () throws(ServiceError) -> IssuedToken
    ) throws(Problem) -> IssuedToken {
        do {
            let token = try body()
            metrics.recordOutcome(kind: kind, outcome: "ok", integration: clientID)
            return token
        } catch {
            switch (error.code, error.subcode) {
            case (.attestationRejected, _), (.assertionRejected, _), (.malformedRequest, .check):
                // Only reached after the integration was found: its client ID is a real one.
                metrics.recordOutcome(kind: kind, outcome: error.subcode.identifier, integration: clientID)
            case (.malformedRequest, _):
                metrics.recordOutcome(kind: kind, outcome: error.subcode.identifier, integration: nil)
            default:
                break
            }
            throw Problem(error)
        }
    }

    private func serviceCall<T>(_ body: () throws(ServiceError) -> T) throws(Problem) -> T {
        do {
            return try body()
        } catch {
            throw Problem(error)
        }
    }

    // MARK: Gateway endpoints

    /// The `token` of a gateway request (introspection, revocation), after the gateway credential
    /// and the form checks.
    private func gatewayToken(_ request: HTTPRequest, realm: String) throws(Problem) -> String {
        guard let secrets = settings.gatewaySecrets, case .credential(let presented) = Self.bearer(request), secrets.accepts(presented)
        else {
            throw Problem(
                .unauthorized, .gatewaySecret, "this endpoint needs the gateway credential",
                headers: [HTTPHeader(name: "WWW-Authenticate", value: "Bearer realm=\"\(realm)\"")])
        }
        try RequestDecoding.requireContentType(request, .form)
        guard let token = FormBody.parse(request.body)?["token"] else {
            throw Problem.malformed(.missing(.token), "the form must carry token=...")
        }
        return token
    }

    /// RFC 7009 revocation, for callers holding the gateway secret: 200 whatever the token was
    /// (unknown, expired, garbage), so the answer says nothing about it.
    private func revoke(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        let token = try gatewayToken(request, realm: "attestd-revoke")
        try serviceCall { () throws(ServiceError) in try service.revokeToken(token) }
        return HTTPResponse(status: 200, headers: [HTTPHeader(name: "Cache-Control", value: "no-store")])
    }

    /// RFC 7662 introspection, for callers holding the gateway secret.
    private func introspect(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        let token = try gatewayToken(request, realm: "attestd-introspect")
        guard let active = try serviceCall({ () throws(ServiceError) in try service.introspect(token) }) else {
            log.outcome = "inactive"
            return JSONBody.response([("active", false)])
        }
        log.clientID = active.clientID
        return JSONBody.response([
            ("active", true), ("scope", active.scope), ("client_id", active.clientID), ("workspace_id", active.workspaceID),
            ("iat", active.issuedAt), ("exp", active.expiresAt), ("token_type", "Bearer"),
        ])
    }

    /// Forward-auth (nginx `auth_request`, Envoy `ext_authz`): 200 with the workspace, or 401.
    private func authorize(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        let invalid = Problem(
            .invalidToken, .invalidToken, "the access token is not valid",
            headers: [HTTPHeader(name: "WWW-Authenticate", value: "Bearer error=\"invalid_token\"")])
        let token: String
        switch Self.bearer(request) {
        case .none:
            // RFC 6750 section 3.1: no credential at all gets the challenge without an error code.
            throw Problem(
                .invalidToken, .missingToken, "send Authorization: Bearer <access token>",
                headers: [HTTPHeader(name: "WWW-Authenticate", value: "Bearer")])
        case .malformed:
            throw invalid
        case .credential(let credential):
            token = credential
        }
        guard let active = try serviceCall({ () throws(ServiceError) in try service.introspect(token) }) else { throw invalid }
        log.clientID = active.clientID
        return HTTPResponse(
            status: 200,
            headers: [
                HTTPHeader(name: "X-Workspace-Id", value: active.workspaceID), HTTPHeader(name: "X-Client-Id", value: active.clientID),
                HTTPHeader(name: "X-Token-Scope", value: active.scope), HTTPHeader(name: "Cache-Control", value: "no-store"),
            ])
    }

    /// What the `Authorization` header carries, in RFC 6750's terms.
    enum BearerCredential: Equatable {
        /// No Bearer credential at all (no header, or another scheme).
        case none
        /// A Bearer credential that cannot be a token: too long, with spaces, empty, or two headers.
        case malformed
        case credential(String)
    }

    /// The credential of exactly one `Authorization: Bearer <credential>` header (scheme
    /// case-insensitive, one space, at most 512 bytes, no further spaces).
    static func bearer(_ request: HTTPRequest) -> BearerCredential {
        let values = request.headerValues("Authorization")
        guard let value = values.first else { return .none }
        let bytes = value.utf8
        let isBearer = bytes.count >= 6 && zip(bytes.prefix(6), "bearer".utf8).allSatisfy { $0 | 0x20 == $1 }
        guard isBearer else { return values.count == 1 ? .none : .malformed }
        guard values.count == 1, bytes.count > 7, bytes.count <= 512, Array(bytes)[6] == 0x20 else { return .malformed }
        let credential = bytes.dropFirst(7)
        guard !credential.contains(0x20) else { return .malformed }
        return .credential(String(decoding: Array(credential), as: UTF8.self))
    }

    // MARK: Operations endpoints

    /// Liveness: the process answers. Says which trust anchor and storage it runs with.
    private func healthz(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        JSONBody.response([
            ("status", "ok"), ("trust_anchor", settings.trustsAppleRoot ? "apple" : "custom (test only)"),
            ("test_mode", settings.testClock != nil), ("storage", settings.storage), ("version", settings.version),
        ])
    }

    /// Readiness: 200 while the storage answers, 503 `storage_unavailable` with Retry-After
    /// while it does not (load balancers take the node out of rotation).
    private func readyz(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        try serviceCall { () throws(ServiceError) in try service.checkStorage() }
        return JSONBody.response([("status", "ready"), ("storage", settings.storage)])
    }

    private func metricsText(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        HTTPResponse(
            status: 200, headers: [HTTPHeader(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")],
            body: Array((metrics.render(gauges: gauges()) + moreMetrics()).utf8))
    }

    // MARK: Test mode

    private func setTestClock(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        let fields = try RequestDecoding.jsonFields(request, required: [.now])
        guard let clock = settings.testClock, let seconds = Int64(fields[.now] ?? ""), seconds >= 0 else {
            throw Problem.malformed(.field(.now), "now must be Unix seconds as a string")
        }
        clock.set(seconds)
        logger.log(.warning, "test clock set", ["test.now": .int(Int(seconds))])
        return JSONBody.response([("now", seconds)])
    }

    private func seedChallenge(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        let fields = try RequestDecoding.jsonFields(request, required: [.clientID, .challenge])
        guard let bytes = Base64Text.decode(fields[.challenge] ?? "", .url), let challenge = Challenge(bytes, seeded: true) else {
            throw Problem.malformed(.field(.challenge), "challenge must be base64url (no padding) of 1 to 256 bytes")
        }
        try serviceCall { () throws(ServiceError) in try service.seedChallenge(clientID: fields[.clientID] ?? "", challenge: challenge) }
        return JSONBody.response([("seeded", true)])
    }
}

/// A flag that is set once: `setFirstTime` is true for the first caller only.
final class OnceFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func setFirstTime() -> Bool { !flag.exchange(true, ordering: .relaxed) }
}

/// Request IDs: a per-process random prefix and a counter (unique, cheap, and not secret).
final class RequestCounter: Sendable {
    private let prefix: String
    private let counter = Atomic<UInt64>(0)

    init() {
        prefix = Hex.encode((try? SecureRandom.bytes(4)) ?? [0, 0, 0, 0])
    }

    func next() -> String {
        "\(prefix)-\(count())"
    }

    /// The next number (from 1).
    func count() -> UInt64 { counter.wrappingAdd(1, ordering: .relaxed).newValue }

    /// A request ID from a proxy, when it is 1 to 64 of A-Z a-z 0-9 . _ - (nginx's `$request_id` is
    /// 32 hex digits); nil for anything else, which then gets attestd's own.
    static func forwarded(_ value: String?) -> String? {
        guard let value, (1...64).contains(value.utf8.count),
            value.utf8.allSatisfy({ byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2E || byte == 0x5F
                    || byte == 0x2D
            })
        else { return nil }
        return value
    }
}
