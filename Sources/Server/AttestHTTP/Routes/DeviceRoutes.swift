import AttestCore
import AttestCrypto
import AttestHTTPServer
import AttestService

/// What devices call: `/v1/challenge`, `/v1/attest`, `/v1/token`, `/v1/debug-token`
/// (docs/API.md). Each handler decodes its fields and calls one use case of the service; every
/// decision is the service's. They run on the offload threads (`RouteAnswer.offload`): the HTTP
/// worker waits for no statement, so the gateway checks it answers from memory never queue
/// behind one, and the writes that queue up share a flush.
struct DeviceRoutes: Sendable {
    let service: TokenService
    /// Test mode accepts seeded challenges of any length (recorded devices).
    let acceptsSeededChallenges: Bool

    func register(in group: RouteGroup) {
        group.offload("POST", "/v1/challenge", name: "challenge", challenge)
        group.offload("POST", "/v1/attest", name: "attest", attest)
        group.offload("POST", "/v1/token", name: "token", token)
        group.offload("POST", "/v1/debug-token", name: "debug_token", debugToken)
    }

    private func challenge(_ context: inout RequestContext) throws -> HTTPResponse {
        let fields = try RequestDecoding.jsonFields(context.request, required: [.clientID])
        context.log.clientID = fields[.clientID]
        let issued = try service.issueChallenge(clientID: try RequestDecoding.clientID(fields[.clientID] ?? ""), from: context.client)
        return JSONBody.response([("challenge", issued.challenge), ("expires_in", issued.expiresIn)])
    }

    private func attest(_ context: inout RequestContext) throws -> HTTPResponse {
        let request: AttestRequest = try decode(&context, .attestation, .attestation, limit: AttestationObject.maximumSize)
        return Self.tokenResponse(try service.attest(request, from: context.client))
    }

    private func token(_ context: inout RequestContext) throws -> HTTPResponse {
        let request: RefreshRequest = try decode(&context, .assertion, .assertion, limit: AssertionObject.maximumSize)
        return Self.tokenResponse(try service.refresh(request, from: context.client))
    }

    /// A debug token exchanged for an access token (a build that cannot attest).
    private func debugToken(_ context: inout RequestContext) throws -> HTTPResponse {
        let fields = try RequestDecoding.jsonFields(context.request, required: [.clientID, .debugToken])
        context.log.clientID = fields[.clientID]
        let clientID = try RequestDecoding.clientID(fields[.clientID] ?? "")
        return Self.tokenResponse(try service.exchangeDebugToken(clientID: clientID, secret: fields[.debugToken] ?? ""))
    }

    /// An attest or refresh body (`object` names its CBOR field). A malformed challenge is
    /// refused as it is (there is nothing to spend); any other malformed field spends the
    /// challenge (`TokenService.refuse`).
    private func decode<Proof>(
        _ context: inout RequestContext, _ object: ServiceError.RequestField, _ kind: VerificationKind, limit: Int
    ) throws -> DeviceRequest<Proof> {
        let fields = try RequestDecoding.jsonFields(context.request, required: [.clientID, .keyID, object, .challenge])
        context.log.clientID = fields[.clientID]
        let challenge = try RequestDecoding.challenge(fields[.challenge] ?? "", seeded: acceptsSeededChallenges)
        do throws(ServiceError) {
            let request = DeviceRequest<Proof>(
                clientID: try RequestDecoding.clientID(fields[.clientID] ?? ""), keyID: try RequestDecoding.keyID(fields[.keyID] ?? ""),
                object: try RequestDecoding.object(fields[object] ?? "", object, limit: limit), challenge: challenge)
            // The device's public key ID (no secret), so that a misbehaving device can be found in the log.
            context.log.keyID = Hex.encode(request.keyID.bytes)
            return request
        } catch {
            try service.refuse(error, presenting: challenge, as: kind)
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
