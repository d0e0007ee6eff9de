import AttestCore
import AttestCrypto
import AttestHTTP
import AttestHTTPServer
import AttestService
import AttestTesting
import Foundation
import Testing

/// The API called as a responder, with built requests and no socket: routing and the error table.
@Suite("AttestAPI as a responder (no socket)")
struct ResponderTests {
    static func request(
        _ method: String, _ path: String, json: String? = nil, contentType: String? = nil, headers: [HTTPHeader] = []
    ) -> HTTPRequest {
        var all = headers
        if json != nil { all.append(HTTPHeader(name: "Content-Type", value: contentType ?? "application/json")) }
        return HTTPRequest(method: method, path: path, headers: all, body: Array((json ?? "").utf8))
    }

    static func body(_ response: HTTPResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    @Test("routes by one table: unknown paths 404, wrong methods 405 with Allow, HEAD wherever GET is")
    func routing() throws {
        let world = try HTTPWorld()
        let api = world.server.api
        let missing = api.respond(to: Self.request("GET", "/v2/nothing"))
        #expect(missing.status == 404)
        #expect(Self.body(missing)["code"] as? String == "not_found")
        let wrongMethod = api.respond(to: Self.request("GET", "/v1/challenge"))
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers.contains(HTTPHeader(name: "Allow", value: "POST")))
        #expect(api.respond(to: Self.request("HEAD", "/healthz")).status == 200)
        #expect(api.respond(to: Self.request("HEAD", "/v1/challenge")).status == 405)
        #expect(api.respond(to: Self.request("GET", "/metrics")).status == 200)
        #expect(api.respond(to: Self.request("DELETE", "/metrics")).status == 405)
        for response in [missing, wrongMethod] {
            #expect(response.headers.contains { $0.name == "X-Request-Id" })
        }
    }

    @Test("registers the /test/ routes only in test mode")
    func testRoutesOnlyInTestMode() throws {
        let production = try HTTPWorld()
        #expect(production.server.api.respond(to: Self.request("POST", "/test/clock", json: #"{"now":"1"}"#)).status == 404)
        let testMode = try HTTPWorld { $0.insecureTestMode = true }
        #expect(testMode.server.api.respond(to: Self.request("POST", "/test/clock", json: #"{"now":"1"}"#)).status == 200)
    }

    @Test("/healthz reports the storage kind and /readyz answers 200 while the storage answers")
    func healthAndReadiness() throws {
        let world = try HTTPWorld()
        let health = world.server.api.respond(to: Self.request("GET", "/healthz"))
        #expect(Self.body(health)["storage"] as? String == "sqlite")
        let ready = world.server.api.respond(to: Self.request("GET", "/readyz"))
        #expect(ready.status == 200)
        #expect(Self.body(ready)["status"] as? String == "ready")
    }

    /// One field of a valid attest body replaced by `value` (nil: the field left out).
    static let malformedAttestFields: [(field: String, value: String?, reason: String)] = [
        ("key_id", "not base64", "key_id"), ("key_id", "AAAA", "key_id_length"), ("attestation", "@@@@", "attestation"),
        ("attestation", String(repeating: "A", count: 22_000), "attestation_too_large"), ("challenge", "short", "challenge"),
        ("client_id", nil, "missing_client_id"), ("key_id", nil, "missing_key_id"), ("attestation", nil, "missing_attestation"),
        ("challenge", nil, "missing_challenge"),
    ]

    @Test("answers each malformed attest field with 400 and its reason", arguments: 0..<malformedAttestFields.count)
    func malformedAttestField(_ index: Int) throws {
        let (field, value, reason) = Self.malformedAttestFields[index]
        let world = try HTTPWorld()
        let device = try SyntheticDevice()
        let challenge = try world.server.service.issueChallenge(clientID: world.integration.clientID, from: "127.0.0.1").challenge
        var members: [(String, String)] = [
            ("client_id", world.integration.clientID), ("key_id", Data(device.keyID).base64EncodedString()),
            ("attestation", "oQ=="), ("challenge", challenge),
        ]
        members = members.compactMap { name, original in name == field ? value.map { (name, $0) } : (name, original) }
        let response = world.server.api.respond(
            to: Self.request("POST", "/v1/attest", json: JSONText.object(members.map { ($0.0, $0.1 as any Sendable) })))
        #expect(response.status == 400)
        #expect(Self.body(response)["code"] as? String == "malformed_request")
        #expect(Self.body(response)["reason"] as? String == reason)
    }

    @Test("refuses a body that is not JSON, has a duplicate key, or has the wrong media type")
    func bodyShape() throws {
        let world = try HTTPWorld()
        let api = world.server.api
        let cases: [(HTTPRequest, Int, String)] = [
            (Self.request("POST", "/v1/challenge", json: "{not json"), 400, "json"),
            (Self.request("POST", "/v1/challenge", json: #"{"client_id":"a","client_id":"b"}"#), 400, "json_duplicate_key"),
            (Self.request("POST", "/v1/challenge", json: #"{"client_id":1}"#), 400, "json"),
            (Self.request("POST", "/v1/challenge", json: "{}", contentType: "text/plain"), 415, "content_type"),
            (Self.request("POST", "/v1/challenge", json: "{}", contentType: "application/json; charset=utf-8"), 400, "missing_client_id"),
        ]
        for (request, status, reason) in cases {
            let response = api.respond(to: request)
            #expect(response.status == status)
            #expect(Self.body(response)["reason"] as? String == reason)
        }
    }

    @Test("a well-formed challenge is spent even when another field is malformed")
    func malformedFieldSpendsChallenge() throws {
        let world = try HTTPWorld()
        let device = try SyntheticDevice()
        let client = try world.client()
        let valid = try world.attestBody(client, device: device)
        let broken = valid.replacingOccurrences(of: #""key_id":""#, with: #""key_id":"@"#)
        let refused = world.server.api.respond(to: Self.request("POST", "/v1/attest", json: broken))
        #expect(Self.body(refused)["reason"] as? String == "key_id")
        let replayed = world.server.api.respond(to: Self.request("POST", "/v1/attest", json: valid))
        #expect(replayed.status == 401)
        #expect(Self.body(replayed)["reason"] as? String == "challenge_used")
    }
}
