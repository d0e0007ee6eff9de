import AttestCore
import AttestCrypto
package import AttestHTTPServer
package import AttestObservability
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
        typealias Handler = @Sendable (AttestAPI) -> (HTTPRequest, inout RequestLog) throws(Problem) -> HTTPResponse
        let method: String
        let name: RouteName
        let handler: Handler
        /// Set for the gateway's routes, whose answer waits for one token lookup: the handler is
        /// built from it, and a deferred answer (`respond(to:answer:)`) waits without a worker.
        let lookup: TokenLookupRoute?

        init(method: String, name: RouteName, handler: @escaping Handler) {
            self.method = method
            self.name = name
            self.handler = handler
            lookup = nil
        }

        init(method: String, name: RouteName, lookup: TokenLookupRoute) {
            self.method = method
            self.name = name
            self.lookup = lookup
            handler = { api in
                { request, log throws(Problem) in
                    let token = try lookup.token(api)(request)
                    let active = try api.serviceCall { () throws(ServiceError) in try api.service.introspect(token) }
                    return try lookup.answer(api)(active, &log)
                }
            }
        }
    }

    /// A route that answers from one token lookup: the token the request presents (after its
    /// checks), and the response from what the lookup found.
    struct TokenLookupRoute: Sendable {
        let token: @Sendable (AttestAPI) -> (HTTPRequest) throws(Problem) -> String
        let answer: @Sendable (AttestAPI) -> (ActiveToken?, inout RequestLog) throws(Problem) -> HTTPResponse
    }

    /// What a request's log line says besides route and status.
    struct RequestLog {
        /// The client ID as the request gave it (also when malformed, to help whoever reads the
        /// log), cut to 64 bytes: an unbounded one must not make an unbounded log line. The log
        /// writer escapes it; nothing is keyed by it.
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
        "/v1/introspect": Route(
            method: "POST", name: .introspect, lookup: TokenLookupRoute(token: { $0.introspectedToken }, answer: { $0.introspection })),
        "/v1/revoke": Route(method: "POST", name: .revoke, handler: { $0.revoke }),
        "/v1/authorize": Route(
            method: "GET", name: .authorize, lookup: TokenLookupRoute(token: { $0.authorizedToken }, answer: { $0.authorization })),
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

    /// One request on its way through the API: what its log line and metrics need at the end.
    private struct Exchange: Sendable {
        let started = ContinuousClock.now
        let requestID: String
        let route: Route?
        var log = RequestLog()
    }

    package func respond(to request: HTTPRequest) -> HTTPResponse {
        var exchange = begin(request)
        var response: HTTPResponse
        do throws(Problem) {
            response = try Self.checked(exchange.route, for: request).handler(self)(request, &exchange.log)
        } catch {
            response = failure(error, &exchange.log)
        }
        return finish(response, exchange)
    }

    /// Answers a gateway route's request from its token lookup when the lookup comes back: on
    /// PostgreSQL the HTTP worker serves other connections meanwhile. Every other route answers at
    /// once, as `respond(to:)`.
    package func respond(to request: HTTPRequest, answer: DeferredResponse) {
        var exchange = begin(request)
        let token: String
        let lookup: TokenLookupRoute
        do throws(Problem) {
            let route = try Self.checked(exchange.route, for: request)
            guard let routeLookup = route.lookup else {
                let response = finish(try route.handler(self)(request, &exchange.log), exchange)
                return answer.complete { response }
            }
            lookup = routeLookup
            token = try lookup.token(self)(request)
        } catch {
            let response = finish(failure(error, &exchange.log), exchange)
            return answer.complete { response }
        }
        let begun = exchange
        service.introspect(token) { outcome in
            // Built on the connection's worker once it is resumed, not on the lookup's thread.
            answer.complete {
                var exchange = begun
                var response: HTTPResponse
                do throws(Problem) {
                    let active = try self.serviceCall { () throws(ServiceError) in try outcome.get() }
                    response = try lookup.answer(self)(active, &exchange.log)
                } catch {
                    response = self.failure(error, &exchange.log)
                }
                return self.finish(response, exchange)
            }
        }
    }

    private func begin(_ request: HTTPRequest) -> Exchange {
        // The proxy's ID (nginx's $request_id) when it sent a sane one, so both logs correlate.
        let requestID = RequestCounter.forwarded(request.header("X-Request-Id")) ?? requestCounter.next()
        var exchange = Exchange(requestID: requestID, route: table[request.path])
        exchange.log.client = client(of: request)
        return exchange
    }

    /// The request's route, when there is one and it takes the request's method.
    private static func checked(_ route: Route?, for request: HTTPRequest) throws(Problem) -> Route {
        guard let route else { throw Problem(.notFound, .notFound, "no such endpoint") }
        guard request.method == route.method || (route.method == "GET" && request.method == "HEAD") else {
            throw Problem(
                .methodNotAllowed, .methodNotAllowed, "\(request.path) takes \(route.method)",
                headers: [HTTPHeader(name: "Allow", value: route.method)])
        }
        return route
    }

    /// The response as sent: with its request ID, counted in the metrics and logged.
    private func finish(_ answered: HTTPResponse, _ exchange: Exchange) -> HTTPResponse {
        var response = answered
        response.headers.append(HTTPHeader(name: "X-Request-Id", value: exchange.requestID))
        let elapsed = ContinuousClock.now - exchange.started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let name = exchange.route?.name ?? .unknown
        metrics.recordRequest(route: name.rawValue, status: response.status, seconds: seconds)
        if (!name.isQuiet || response.status >= 500) && logs(name, response.status) {
            let log = exchange.log
            var fields: [(String, LogValue)] = [
                ("request.id", .string(exchange.requestID)), ("route", .string(name.rawValue)), ("status", .int(response.status)),
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
        log.clientID = fields[.clientID]
        let clientID = try RequestDecoding.clientID(fields[.clientID] ?? "")
        let issued = try serviceCall { () throws(ServiceError) in
            try service.issueChallenge(clientID: clientID, from: log.client)
        }
        return JSONBody.response([("challenge", issued.challenge), ("expires_in", issued.expiresIn)])
    }

    private func attest(_ request: HTTPRequest, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        let fields = try RequestDecoding.jsonFields(request, required: [.clientID, .keyID, .attestation, .challenge])
        log.clientID = fields[.clientID]
        let clientID = try presentedClientID(fields)
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
        log.clientID = fields[.clientID]
        let clientID = try presentedClientID(fields)
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

    /// The client ID of an attest or refresh request. A malformed one is refused before anything
    /// is keyed by it; the request's challenge, when well formed, is spent first like any other
    /// malformed field's (spent on first presentation).
    private func presentedClientID(_ fields: [ServiceError.RequestField: String]) throws(Problem) -> ClientID {
        do {
            return try RequestDecoding.clientID(fields[.clientID] ?? "")
        } catch {
            if let challenge = try? RequestDecoding.challenge(fields[.challenge] ?? "", seeded: settings.testClock != nil) {
                try serviceCall { () throws(ServiceError) in try service.spend(challenge) }
            }
            throw error
        }
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
        _ kind: Metrics.VerificationKind, clientID: ClientID, _ body: () throws(ServiceError) -> IssuedToken
    ) throws(Problem) -> IssuedToken {
        do {
            let token = try body()
            metrics.recordOutcome(kind: kind, outcome: "ok", integration: clientID.text)
            return token
        } catch {
            switch (error.code, error.subcode) {
            case (.attestationRejected, _), (.assertionRejected, _), (.malformedRequest, .check):
                // Only reached after the integration was found: its client ID is a real one.
                metrics.recordOutcome(kind: kind, outcome: error.subcode.identifier, integration: clientID.text)
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

    /// RFC 7662 introspection, for callers holding the gateway secret: the token asked about.
    private func introspectedToken(_ request: HTTPRequest) throws(Problem) -> String {
        try gatewayToken(request, realm: "attestd-introspect")
    }

    /// RFC 7662 introspection's answer.
    private func introspection(_ active: ActiveToken?, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        guard let active else {
            log.outcome = "inactive"
            return JSONBody.response([("active", false)])
        }
        log.clientID = active.clientID
        return JSONBody.response([
            ("active", true), ("scope", active.scope), ("client_id", active.clientID), ("workspace_id", active.workspaceID),
            ("iat", active.issuedAt), ("exp", active.expiresAt), ("token_type", "Bearer"),
        ])
    }

    /// Forward-auth (nginx `auth_request`, Envoy `ext_authz`): the bearer token presented.
    private func authorizedToken(_ request: HTTPRequest) throws(Problem) -> String {
        switch Self.bearer(request) {
        case .none:
            // RFC 6750 section 3.1: no credential at all gets the challenge without an error code.
            throw Problem(
                .invalidToken, .missingToken, "send Authorization: Bearer <access token>",
                headers: [HTTPHeader(name: "WWW-Authenticate", value: "Bearer")])
        case .malformed:
            throw Self.invalidToken
        case .credential(let credential):
            return credential
        }
    }

    private static let invalidToken = Problem(
        .invalidToken, .invalidToken, "the access token is not valid",
        headers: [HTTPHeader(name: "WWW-Authenticate", value: "Bearer error=\"invalid_token\"")])

    /// Forward-auth's answer: 200 with the workspace, or 401.
    private func authorization(_ active: ActiveToken?, _ log: inout RequestLog) throws(Problem) -> HTTPResponse {
        guard let active else { throw Self.invalidToken }
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
        let clientID = try RequestDecoding.clientID(fields[.clientID] ?? "")
        guard let bytes = Base64Text.decode(fields[.challenge] ?? "", .url), let challenge = Challenge(bytes, seeded: true) else {
            throw Problem.malformed(.field(.challenge), "challenge must be base64url (no padding) of 1 to 256 bytes")
        }
        try serviceCall { () throws(ServiceError) in try service.seedChallenge(clientID: clientID, challenge: challenge) }
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
