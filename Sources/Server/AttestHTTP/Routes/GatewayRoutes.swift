import AttestCrypto
import AttestHTTPServer
import AttestService

/// What the API gateway calls: forward-auth (`GET /v1/authorize`, nginx `auth_request`, Envoy
/// `ext_authz`), RFC 7662 introspection and RFC 7009 revocation. The last two need the gateway
/// credential (`GatewayCredential`). Both checks answer after one token lookup, which on
/// PostgreSQL waits without holding an HTTP worker; a revocation waits for its write the same way.
struct GatewayRoutes: Sendable {
    let service: TokenService
    let secrets: GatewaySecrets?

    func register(in group: RouteGroup) {
        group.add("GET", "/v1/authorize", name: "authorize", .lookup(authorize))
        group.group("", middleware: [GatewayCredential(secrets: secrets, realm: "attestd-introspect")])
            .add("POST", "/v1/introspect", name: "introspect", .lookup(introspect))
        group.group("", middleware: [GatewayCredential(secrets: secrets, realm: "attestd-revoke")])
            .offload("POST", "/v1/revoke", name: "revoke", revoke)
    }

    /// Forward-auth: 200 with the workspace, or 401.
    private func authorize(_ context: inout RequestContext, _ reply: @escaping @Sendable (@escaping RouteAnswer.Handler) -> Void) throws {
        let token = try Self.bearerToken(context.request)
        service.introspect(token) { outcome in
            reply { context in
                guard let active = try outcome.get() else { throw Self.invalidToken }
                context.log.clientID = active.clientID
                return HTTPResponse(
                    status: 200,
                    headers: [
                        HTTPHeader(name: "X-Workspace-Id", value: active.workspaceID),
                        HTTPHeader(name: "X-Client-Id", value: active.clientID),
                        HTTPHeader(name: "X-Token-Scope", value: active.scope), HTTPHeader(name: "Cache-Control", value: "no-store"),
                    ] + (active.debug ? [HTTPHeader(name: "Attest-Debug", value: "true")] : []))
            }
        }
    }

    /// RFC 7662 introspection of the form's `token`.
    private func introspect(_ context: inout RequestContext, _ reply: @escaping @Sendable (@escaping RouteAnswer.Handler) -> Void) throws {
        let token = try Self.formToken(context.request)
        service.introspect(token) { outcome in
            reply { context in
                guard let active = try outcome.get() else {
                    context.log.outcome = "inactive"
                    return JSONBody.response(.object([JSONValue.Member("active", .bool(false))]))
                }
                context.log.clientID = active.clientID
                return JSONBody.response(
                    .object(
                        [
                            JSONValue.Member("active", .bool(true)), JSONValue.Member("scope", .string(active.scope)),
                            JSONValue.Member("client_id", .string(active.clientID)),
                            JSONValue.Member("workspace_id", .string(active.workspaceID)),
                            JSONValue.Member("iat", .integer(active.issuedAt)), JSONValue.Member("exp", .integer(active.expiresAt)),
                            JSONValue.Member("token_type", .string("Bearer")),
                        ] + (active.debug ? [JSONValue.Member("debug", .bool(true))] : [])))
            }
        }
    }

    /// RFC 7009 revocation: 200 whatever the token was (unknown, expired, garbage), so the answer
    /// says nothing about it. The log line says what happened: a prefix of the token's SHA-256,
    /// the client ID of a live token, and `revoked` or `no_live_token`.
    /// It answers once the revocation has committed (on PostgreSQL, once every node has dropped
    /// its kept answers), from the offload threads.
    private func revoke(_ context: inout RequestContext) throws -> HTTPResponse {
        let revocation = try service.revokeToken(try Self.formToken(context.request))
        context.log.tokenHashPrefix = revocation?.hashPrefix
        context.log.clientID = revocation?.clientID
        context.log.outcome = revocation?.deleted == true ? "revoked" : "no_live_token"
        return HTTPResponse(status: 200, headers: [HTTPHeader(name: "Cache-Control", value: "no-store")])
    }

    /// The `token` of a form body.
    private static func formToken(_ request: HTTPRequest) throws(Problem) -> String {
        try RequestDecoding.requireContentType(request, .form)
        guard let token = FormBody.parse(request.body)?["token"] else {
            throw Problem.malformed(.missing(.token), "the form must carry token=...")
        }
        return token
    }

    /// The bearer token presented to forward-auth.
    private static func bearerToken(_ request: HTTPRequest) throws(Problem) -> String {
        switch BearerCredential(request) {
        case .none:
            // RFC 6750 section 3.1: no credential at all gets the challenge without an error code.
            throw Problem(
                .invalidToken, .missingToken, "send Authorization: Bearer <access token>",
                headers: [HTTPHeader(name: "WWW-Authenticate", value: "Bearer")])
        case .malformed:
            throw invalidToken
        case .credential(let credential):
            return credential
        }
    }

    static let invalidToken = Problem(
        .invalidToken, .invalidToken, "the access token is not valid",
        headers: [HTTPHeader(name: "WWW-Authenticate", value: "Bearer error=\"invalid_token\"")])
}

/// Refuses a request without the gateway credential (`Authorization: Bearer <secret>`) with 401
/// and the route's realm.
struct GatewayCredential: RouterMiddleware {
    let secrets: GatewaySecrets?
    let realm: String

    func prepare(_ context: inout RequestContext) throws(Problem) {
        guard let secrets, case .credential(let presented) = BearerCredential(context.request), secrets.accepts(presented) else {
            throw Problem(
                .unauthorized, .gatewaySecret, "this endpoint needs the gateway credential",
                headers: [HTTPHeader(name: "WWW-Authenticate", value: "Bearer realm=\"\(realm)\"")])
        }
    }
}

/// What the `Authorization` header carries, in RFC 6750's terms.
enum BearerCredential: Equatable {
    /// No Bearer credential at all (no header, or another scheme).
    case none
    /// A Bearer credential that cannot be a token: too long, with spaces, empty, or two headers.
    case malformed
    case credential(String)

    /// The credential of exactly one `Authorization: Bearer <credential>` header (scheme
    /// case-insensitive, one space, at most 512 bytes, no further spaces).
    init(_ request: HTTPRequest) {
        let values = request.headerValues("Authorization")
        guard let value = values.first else {
            self = .none
            return
        }
        let bytes = value.utf8
        let isBearer = bytes.count >= 6 && zip(bytes.prefix(6), "bearer".utf8).allSatisfy { $0 | 0x20 == $1 }
        guard isBearer else {
            self = values.count == 1 ? .none : .malformed
            return
        }
        guard values.count == 1, bytes.count > 7, bytes.count <= 512, bytes.dropFirst(6).first == 0x20 else {
            self = .malformed
            return
        }
        let credential = bytes.dropFirst(7)
        self = credential.contains(0x20) ? .malformed : .credential(String(Substring(credential)))
    }
}
