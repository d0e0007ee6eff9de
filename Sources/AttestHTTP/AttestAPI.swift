import AttestCrypto
package import AttestHTTPServer
package import AttestService
import Foundation
import Synchronization

/// The HTTP API of attestd (docs/API.md): routing, request decoding, problem documents,
/// metrics and one log line per request. All decisions are the `TokenService`'s.
package struct AttestAPI: HTTPResponder {
    /// What the API needs besides the service.
    package struct Settings: Sendable {
        /// The credential `/v1/introspect` callers present as `Authorization: Bearer`; nil
        /// refuses every introspection (401).
        package var gatewaySecret: String?
        /// False when a test or demo trust anchor replaces Apple's root (reported by /healthz).
        package var trustsAppleRoot: Bool
        package var version: String
        /// Set only in `--insecure-test-mode`: enables the /test/ routes.
        package var testClock: TestModeClock?

        package init(gatewaySecret: String?, trustsAppleRoot: Bool, version: String, testClock: TestModeClock? = nil) {
            self.gatewaySecret = gatewaySecret
            self.trustsAppleRoot = trustsAppleRoot
            self.version = version
            self.testClock = testClock
        }
    }

    let service: TokenService
    let settings: Settings
    let logger: Logger
    package let metrics: Metrics
    let gauges: @Sendable () -> [(name: String, help: String, value: Int)]
    private let requestCounter = RequestCounter()

    package init(
        service: TokenService, settings: Settings, logger: Logger,
        gauges: @escaping @Sendable () -> [(name: String, help: String, value: Int)] = { [] }
    ) {
        self.service = service
        self.settings = settings
        self.logger = logger
        metrics = Metrics(version: settings.version)
        self.gauges = gauges
    }

    /// The routes: path → (method, handler).
    private static let routes: [String: (method: String, name: String)] = [
        "/v1/challenge": ("POST", "challenge"), "/v1/attest": ("POST", "attest"), "/v1/token": ("POST", "token"),
        "/v1/introspect": ("POST", "introspect"), "/v1/authorize": ("GET", "authorize"), "/healthz": ("GET", "healthz"),
        "/metrics": ("GET", "metrics"),
    ]

    /// Routes that exist only in `--insecure-test-mode`.
    private static let testRoutes: [String: (method: String, name: String)] = [
        "/test/clock": ("POST", "test_clock"), "/test/challenge": ("POST", "test_challenge"),
    ]

    package func respond(to request: HTTPRequest) -> HTTPResponse {
        let started = ContinuousClock.now
        let requestID = requestCounter.next()
        var context = LogContext()
        let route = Self.routes[request.path] ?? (settings.testClock != nil ? Self.testRoutes[request.path] : nil)
        var response: HTTPResponse
        if let route {
            if request.method == route.method || (route.method == "GET" && request.method == "HEAD") {
                do {
                    response = try handle(route.name, request, &context)
                } catch {
                    context.outcome = error.reason
                    response = error.response
                }
            } else {
                context.outcome = "method_not_allowed"
                var problem = Problem(
                    status: 405, code: "method_not_allowed", reason: "method_not_allowed", detail: "\(request.path) takes \(route.method)")
                problem.headers = [HTTPHeader(name: "Allow", value: route.method)]
                response = problem.response
            }
        } else {
            context.outcome = "not_found"
            response = Problem(status: 404, code: "not_found", reason: "not_found", detail: "no such endpoint").response
        }
        response.headers.append(HTTPHeader(name: "X-Request-Id", value: requestID))
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let routeName = route?.name ?? "unknown"
        metrics.recordRequest(route: routeName, status: response.status, seconds: seconds)
        if routeName != "metrics" && routeName != "healthz" {
            var fields: [(String, LogValue)] = [
                ("request.id", .string(requestID)), ("route", .string(routeName)), ("status", .int(response.status)),
                ("duration_ms", .double((seconds * 1e6).rounded() / 1e3)), ("outcome", .string(context.outcome ?? "ok")),
            ]
            if let clientID = context.clientID { fields.append(("client.id", .string(clientID))) }
            fields.append(("remote", .string(request.remoteAddress)))
            logger.log(response.status >= 500 ? "error" : "info", "request", fields: fields)
        }
        return response
    }

    struct LogContext {
        var clientID: String?
        var outcome: String?
    }

    private func handle(_ route: String, _ request: HTTPRequest, _ context: inout LogContext) throws(Problem) -> HTTPResponse {
        switch route {
        case "challenge":
            let fields = try jsonFields(request, required: ["client_id"])
            context.clientID = fields["client_id"]
            let issued = try serviceCall { () throws(ServiceError) in
                try service.issueChallenge(clientID: fields["client_id"] ?? "", from: request.remoteAddress)
            }
            return JSONBody.response([("challenge", issued.challenge), ("expires_in", issued.expiresIn)])
        case "attest":
            let fields = try jsonFields(request, required: ["client_id", "key_id", "attestation", "challenge"])
            context.clientID = fields["client_id"]
            let attest = AttestRequest(
                clientID: fields["client_id"] ?? "", keyID: fields["key_id"] ?? "", attestation: fields["attestation"] ?? "",
                challenge: fields["challenge"] ?? "")
            let token = try verified("attestation") { () throws(ServiceError) in try service.attest(attest, from: request.remoteAddress) }
            return tokenResponse(token)
        case "token":
            let fields = try jsonFields(request, required: ["client_id", "key_id", "assertion", "challenge"])
            context.clientID = fields["client_id"]
            let refresh = RefreshRequest(
                clientID: fields["client_id"] ?? "", keyID: fields["key_id"] ?? "", assertion: fields["assertion"] ?? "",
                challenge: fields["challenge"] ?? "")
            let token = try verified("assertion") { () throws(ServiceError) in try service.refresh(refresh, from: request.remoteAddress) }
            return tokenResponse(token)
        case "introspect":
            return try introspect(request, &context)
        case "authorize":
            return try authorize(request, &context)
        case "healthz":
            return JSONBody.response([
                ("status", "ok"), ("trust_anchor", settings.trustsAppleRoot ? "apple" : "custom (test only)"),
                ("test_mode", settings.testClock != nil),
                ("version", settings.version),
            ])
        case "test_clock":
            let fields = try jsonFields(request, required: ["now"])
            guard let clock = settings.testClock, let seconds = Int64(fields["now"] ?? ""), seconds >= 0 else {
                throw Problem.malformed("now", "now must be Unix seconds as a string")
            }
            clock.set(seconds)
            logger.log("warning", "test clock set", ["test.now": .int(Int(seconds))])
            return JSONBody.response([("now", seconds)])
        case "test_challenge":
            let fields = try jsonFields(request, required: ["client_id", "challenge"])
            guard let bytes = Encoding.base64URL(fields["challenge"] ?? ""), (1...256).contains(bytes.count) else {
                throw Problem.malformed("challenge", "challenge must be base64url (no padding) of 1 to 256 bytes")
            }
            try serviceCall { () throws(ServiceError) in try service.seedChallenge(clientID: fields["client_id"] ?? "", bytes: bytes) }
            return JSONBody.response([("seeded", true)])
        default:
            let text = metrics.render(gauges: gauges())
            return HTTPResponse(
                status: 200, headers: [HTTPHeader(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")],
                body: Array(text.utf8))
        }
    }

    private func tokenResponse(_ token: IssuedToken) -> HTTPResponse {
        metrics.recordTokenMinted()
        return JSONBody.response([
            ("access_token", token.accessToken), ("token_type", "Bearer"), ("expires_in", token.expiresIn), ("scope", token.scope),
            ("workspace_id", token.workspaceID),
        ])
    }

    /// Runs a verification, recording its outcome in the metrics.
    private func verified(_ kind: String, _ body: () throws(ServiceError) -> IssuedToken) throws(Problem) -> IssuedToken {
        do {
            let token = try body()
            metrics.recordOutcome(kind: kind, code: "ok")
            return token
        } catch {
            if [.attestationRejected, .assertionRejected, .malformedRequest].contains(error.code) {
                metrics.recordOutcome(kind: kind, code: error.reason)
            }
            if error.code == .storageUnavailable { logger.log("error", "storage unavailable", ["detail": .string(error.detail)]) }
            throw Problem(error)
        }
    }

    private func serviceCall<T>(_ body: () throws(ServiceError) -> T) throws(Problem) -> T {
        do {
            return try body()
        } catch {
            if error.code == .storageUnavailable { logger.log("error", "storage unavailable", ["detail": .string(error.detail)]) }
            throw Problem(error)
        }
    }

    /// The JSON object of a request, after the media type, shape and required-field checks.
    private func jsonFields(_ request: HTTPRequest, required: [String]) throws(Problem) -> [String: String] {
        let contentType = request.header("Content-Type")?.split(separator: ";").first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard contentType == "application/json" else {
            throw Problem(
                status: 415, code: "unsupported_media_type", reason: "content_type", detail: "send Content-Type: application/json")
        }
        let fields: [String: String]
        do {
            fields = try FlatJSON.parse(request.body)
        } catch .duplicateKey {
            throw Problem.malformed("json_duplicate_key", "a JSON key appears twice")
        } catch {
            throw Problem.malformed("json", "the body must be one JSON object of string values")
        }
        for name in required where fields[name] == nil {
            throw Problem.malformed("missing_\(name)", "\(name) is required")
        }
        return fields
    }

    /// RFC 7662 introspection, for callers holding the gateway secret.
    private func introspect(_ request: HTTPRequest, _ context: inout LogContext) throws(Problem) -> HTTPResponse {
        guard let secret = settings.gatewaySecret, let presented = Self.bearer(request),
            ConstantTime.equals(Array(presented.utf8), Array(secret.utf8))
        else {
            throw Problem(
                status: 401, code: "unauthorized", reason: "gateway_secret", detail: "introspection needs the gateway credential",
                headers: [HTTPHeader(name: "WWW-Authenticate", value: "Bearer realm=\"attestd-introspect\"")])
        }
        let contentType = request.header("Content-Type")?.split(separator: ";").first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard contentType == "application/x-www-form-urlencoded" else {
            throw Problem(
                status: 415, code: "unsupported_media_type", reason: "content_type",
                detail: "send Content-Type: application/x-www-form-urlencoded")
        }
        guard let form = FormBody.parse(request.body), let token = form["token"] else {
            throw Problem.malformed("missing_token", "the form must carry token=...")
        }
        let active = try serviceCall { () throws(ServiceError) in try service.introspect(token) }
        guard let active else {
            context.outcome = "inactive"
            return JSONBody.response([("active", false)])
        }
        context.clientID = active.clientID
        return JSONBody.response([
            ("active", true), ("scope", active.scope), ("client_id", active.clientID), ("workspace_id", active.workspaceID),
            ("iat", active.issuedAt), ("exp", active.expiresAt), ("token_type", "Bearer"),
        ])
    }

    /// Forward-auth (nginx `auth_request`, Envoy `ext_authz`): 200 with the workspace, or 401.
    private func authorize(_ request: HTTPRequest, _ context: inout LogContext) throws(Problem) -> HTTPResponse {
        let challenge = HTTPHeader(name: "WWW-Authenticate", value: "Bearer error=\"invalid_token\"")
        let invalid = Problem(
            status: 401, code: "invalid_token", reason: "invalid_token", detail: "the access token is not valid", headers: [challenge])
        guard let token = Self.bearer(request) else {
            context.outcome = "missing_token"
            throw Problem(
                status: 401, code: "invalid_token", reason: "missing_token", detail: "send Authorization: Bearer <access token>",
                headers: [HTTPHeader(name: "WWW-Authenticate", value: "Bearer")])
        }
        guard let active = try serviceCall({ () throws(ServiceError) in try service.introspect(token) }) else { throw invalid }
        context.clientID = active.clientID
        return HTTPResponse(
            status: 200,
            headers: [
                HTTPHeader(name: "X-Workspace-Id", value: active.workspaceID), HTTPHeader(name: "X-Client-Id", value: active.clientID),
                HTTPHeader(name: "X-Token-Scope", value: active.scope), HTTPHeader(name: "Cache-Control", value: "no-store"),
            ])
    }

    /// The credential of exactly one `Authorization: Bearer <credential>` header (scheme
    /// case-insensitive, one space, no further spaces).
    static func bearer(_ request: HTTPRequest) -> String? {
        let values = request.headerValues("Authorization")
        guard values.count == 1, let value = values.first else { return nil }
        let bytes = value.utf8
        guard bytes.count > 7, bytes.count <= 512 else { return nil }
        let scheme = bytes.prefix(7)
        guard zip(scheme, "bearer ".utf8).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        let credential = bytes.dropFirst(7)
        guard !credential.contains(0x20) else { return nil }
        return String(credential)
    }
}

/// Request IDs: a per-process random prefix and a counter (unique, cheap, and not secret).
final class RequestCounter: Sendable {
    private let prefix: String
    private let counter = Atomic<UInt64>(0)

    init() {
        prefix = ((try? SecureRandom.bytes(4)) ?? [0, 0, 0, 0]).map { String($0, radix: 16) }.joined()
    }

    func next() -> String {
        "\(prefix)-\(counter.wrappingAdd(1, ordering: .relaxed).newValue)"
    }
}
