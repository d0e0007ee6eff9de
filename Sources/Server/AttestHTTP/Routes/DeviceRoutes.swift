import AttestCore
import AttestHTTPServer
import AttestService

/// What devices call: `/v1/challenge`, `/v1/attest`, `/v1/token` (docs/API.md). Decoding only;
/// every decision, the challenge rules included, is the service's. The worker waits for no store
/// statement: the service answers later, from a write waiter, so the gateway checks the worker
/// answers from memory never queue behind one. Attest and token answer once their durable write
/// has committed, and the writes that queue up share a flush.
struct DeviceRoutes: Sendable {
    let service: TokenService
    /// Test mode accepts seeded challenges of any length (recorded devices).
    let acceptsSeededChallenges: Bool

    func register(in group: RouteGroup) {
        // Not started once the server is stopping, and waited for by its drain, as the writes.
        group.add("POST", "/v1/challenge", name: "challenge", .later(challenge, deadline: .storesOwn))
        group.add("POST", "/v1/attest", name: "attest", .later(attest, deadline: .storesOwn))
        group.add("POST", "/v1/token", name: "token", .later(token, deadline: .storesOwn))
        group.add("POST", "/v1/debug-token", name: "debug_token", .later(debugToken, deadline: .storesOwn))
    }

    /// A debug token exchanged for an access token (a build that cannot attest).
    private func debugToken(_ context: inout RequestContext, _ reply: @escaping RouteAnswer.Reply) throws(Problem) {
        let fields = try RequestDecoding.jsonFields(context.request, required: [.clientID, .debugToken])
        context.log.clientID = fields[.clientID]
        let clientID = try Problem.calling { () throws(ServiceError) in try RequestDecoding.clientID(fields[.clientID] ?? "") }
        service.exchangeDebugToken(clientID: clientID, secret: fields[.debugToken] ?? "") { issued in reply(Self.tokenResponse(issued)) }
    }

    private func challenge(_ context: inout RequestContext, _ reply: @escaping RouteAnswer.Reply) throws(Problem) {
        let fields = try RequestDecoding.jsonFields(context.request, required: [.clientID])
        context.log.clientID = fields[.clientID]
        let clientID = try Problem.calling { () throws(ServiceError) in try RequestDecoding.clientID(fields[.clientID] ?? "") }
        service.issueChallenge(clientID: clientID, from: context.client) { outcome in
            reply { _ throws(Problem) in
                let issued = try Problem.calling { () throws(ServiceError) in try outcome.get() }
                return JSONBody.response([("challenge", issued.challenge), ("expires_in", issued.expiresIn)])
            }
        }
    }

    private func attest(_ context: inout RequestContext, _ reply: @escaping RouteAnswer.Reply) throws(Problem) {
        let (presented, client): (Presented<AttestRequest>, String) = try present(
            &context, .attestation, limit: AttestationObject.maximumSize)
        service.attest(presented, from: client) { issued in reply(Self.tokenResponse(issued)) }
    }

    private func token(_ context: inout RequestContext, _ reply: @escaping RouteAnswer.Reply) throws(Problem) {
        let (presented, client): (Presented<RefreshRequest>, String) = try present(&context, .assertion, limit: AssertionObject.maximumSize)
        service.refresh(presented, from: client) { issued in reply(Self.tokenResponse(issued)) }
    }

    /// An attest or refresh body as presented (`object` names its CBOR field) and the client's address.
    private func present<Proof>(
        _ context: inout RequestContext, _ object: ServiceError.RequestField, limit: Int
    ) throws(Problem) -> (Presented<DeviceRequest<Proof>>, String) {
        let fields = try RequestDecoding.jsonFields(context.request, required: [.clientID, .keyID, object, .challenge])
        context.log.clientID = fields[.clientID]
        let presented = try presentedChallenge(fields) { (challenge: Challenge) throws(ServiceError) in
            DeviceRequest<Proof>(
                clientID: try RequestDecoding.clientID(fields[.clientID] ?? ""), keyID: try RequestDecoding.keyID(fields[.keyID] ?? ""),
                object: try RequestDecoding.object(fields[object] ?? "", object, limit: limit), challenge: challenge)
        }
        return (presented, context.client)
    }

    /// The request's challenge (a malformed one is refused at once: there is nothing to spend),
    /// with the decoding of the other fields left to the service.
    private func presentedChallenge<Request: Sendable>(
        _ fields: [ServiceError.RequestField: String], _ decode: @escaping @Sendable (Challenge) throws(ServiceError) -> Request
    ) throws(Problem) -> Presented<Request> {
        let challenge = try Problem.calling { () throws(ServiceError) in
            try RequestDecoding.challenge(fields[.challenge] ?? "", seeded: acceptsSeededChallenges)
        }
        return Presented(challenge: challenge) { () throws(ServiceError) in try decode(challenge) }
    }

    /// The builder of the answer to an attest or refresh.
    private static func tokenResponse(_ outcome: Result<IssuedToken, ServiceError>) -> RouteAnswer.Build {
        { _ throws(Problem) in
            tokenResponse(try Problem.calling { () throws(ServiceError) in try outcome.get() })
        }
    }

    private static func tokenResponse(_ token: IssuedToken) -> HTTPResponse {
        JSONBody.response(
            [
                ("access_token", token.accessToken), ("token_type", "Bearer"), ("expires_in", token.expiresIn), ("scope", token.scope),
                ("workspace_id", token.workspaceID),
            ] + (token.debug ? [("debug", true)] : []))
    }
}
