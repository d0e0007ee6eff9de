import AttestCore
import AttestCrypto
import AttestHTTPServer
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

@testable import AttestHTTP

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
        let api = world.app.router
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

    @Test("logs each migration it applies at start with its id, name and duration")
    func migrationsLogged() throws {
        let world = try HTTPWorld()
        let lines = world.sink.lines.withLock { $0 }.filter { $0.contains(#""msg":"migration applied""#) }
        #expect(lines.count == EmbeddedMigrations.sqlite.count)
        #expect(lines.first?.contains(#""migration.id":1,"migration.name":"initial""#) == true)
        #expect(lines.allSatisfy { $0.contains(#""duration_ms":"#) })
    }

    @Test(
        "a scrape shows the process's memory, descriptors and threads, and the pool's state, read at the scrape",
        arguments: StoreBackend.available)
    func processAndPoolMetrics(_ backend: StoreBackend) throws {
        let world = try HTTPWorld(backend)
        let text = String(decoding: world.app.router.respond(to: Self.request("GET", "/metrics")).body, as: UTF8.self)
        func value(_ name: String) -> Int? {
            text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ").last ?? "") }
        }
        #expect((value("process_resident_memory_bytes") ?? 0) > 1_000_000)
        #expect((value("process_open_fds") ?? 0) > 2)
        #expect((value("process_max_fds") ?? 0) >= (value("process_open_fds") ?? 0))
        #expect((value("process_threads") ?? 0) >= 1)
        #expect(value("attestd_db_pool_size") == (backend == .postgresql ? world.app.store.poolStatistics?.size : 0))
        #expect(value("attestd_db_pool_waiting") == 0)
    }

    @Test("a scrape shows the listener's parked connections and its connection limit, once it listens")
    func listenerMetrics() throws {
        func value(_ name: String, in world: HTTPWorld) -> Int? {
            let text = String(decoding: world.app.router.respond(to: Self.request("GET", "/metrics")).body, as: UTF8.self)
            return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ").last ?? "") }
        }
        let listening = try HTTPWorld(listening: true)
        #expect(value("attestd_http_connection_limit", in: listening) == Int(listening.server.http.connectionLimit))
        #expect(value("attestd_http_parked_connections", in: listening) == 0)
        let silent = try HTTPWorld()
        #expect(value("attestd_http_connection_limit", in: silent) == 0)
    }

    @Test("registers the /test/ routes only in test mode")
    func testRoutesOnlyInTestMode() throws {
        let production = try HTTPWorld()
        #expect(production.app.router.respond(to: Self.request("POST", "/test/clock", json: #"{"now":"1"}"#)).status == 404)
        let testMode = try HTTPWorld() { $0.insecureTestMode = true }
        #expect(testMode.app.router.respond(to: Self.request("POST", "/test/clock", json: #"{"now":"1"}"#)).status == 200)
    }

    @Test("/healthz reports the storage kind and /readyz answers 200 while the storage answers")
    func healthAndReadiness() throws {
        let world = try HTTPWorld()
        let health = world.app.router.respond(to: Self.request("GET", "/healthz"))
        #expect(Self.body(health)["storage"] as? String == "sqlite")
        let ready = world.app.router.respond(to: Self.request("GET", "/readyz"))
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
        let challenge = try world.app.service.issueChallenge(clientID: try #require(world.integration.issuedClientID), from: "127.0.0.1")
            .challenge
        var members: [(String, String)] = [
            ("client_id", world.integration.clientID), ("key_id", Data(device.keyID).base64EncodedString()),
            ("attestation", "oQ=="), ("challenge", challenge),
        ]
        members = members.compactMap { name, original in name == field ? value.map { (name, $0) } : (name, original) }
        let response = world.app.router.respond(
            to: Self.request("POST", "/v1/attest", json: JSONText.object(members.map { ($0.0, $0.1 as any Sendable) })))
        #expect(response.status == 400)
        #expect(Self.body(response)["code"] as? String == "malformed_request")
        #expect(Self.body(response)["reason"] as? String == reason)
    }

    @Test("refuses a body that is not JSON, has a duplicate key, or has the wrong media type")
    func bodyShape() throws {
        let world = try HTTPWorld()
        let api = world.app.router
        let cases: [(HTTPRequest, Int, String)] = [
            (Self.request("POST", "/v1/challenge", json: "{not json"), 400, "json"),
            (Self.request("POST", "/v1/challenge", json: #"{"client_id":"a","client_id":"b"}"#), 400, "json_duplicate_key"),
            (Self.request("POST", "/v1/challenge", json: #"{"client_id":1}"#), 400, "json"),
            (Self.request("POST", "/v1/challenge", json: "{}", contentType: "text/plain"), 415, "content_type"),
            (Self.request("POST", "/v1/challenge", json: "{}", contentType: "application/json; charset=utf-8"), 400, "missing_client_id"),
            // Spaces and tabs around the media type, and its case, do not matter (RFC 9110); other whitespace does.
            (
                Self.request("POST", "/v1/challenge", json: "{}", contentType: " \tApplication/JSON \t;charset=utf-8"), 400,
                "missing_client_id"
            ),
            (Self.request("POST", "/v1/challenge", json: "{}", contentType: "\u{A0}application/json"), 415, "content_type"),
            (Self.request("POST", "/v1/challenge", json: "{}", contentType: "application/jsonx"), 415, "content_type"),
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
        let refused = world.app.router.respond(to: Self.request("POST", "/v1/attest", json: broken))
        #expect(Self.body(refused)["reason"] as? String == "key_id")
        let replayed = world.app.router.respond(to: Self.request("POST", "/v1/attest", json: valid))
        #expect(replayed.status == 401)
        #expect(Self.body(replayed)["reason"] as? String == "challenge_used")
    }

    @Test("an over-long client ID is cut to 64 bytes in the log line")
    func longClientIDLog() throws {
        let world = try HTTPWorld()
        let huge = String(repeating: "x", count: 60_000)
        let response = world.app.router.respond(to: Self.request("POST", "/v1/challenge", json: #"{"client_id":"\#(huge)"}"#))
        #expect(response.status == 400)
        let line = try #require(world.sink.lines.withLock { $0 }.last { $0.contains(#""route":"challenge""#) })
        #expect(line.utf8.count < 1_000)
        #expect(line.contains(String(repeating: "x", count: 64) + "..."))
    }

    @Test(
        "an over-long or malformed Bearer credential is an invalid token (RFC 6750 error=invalid_token); none at all is not",
        arguments: [
            ("Bearer " + String(repeating: "a", count: 10_000), "invalid_token"), ("Bearer a b", "invalid_token"),
            ("Bearer ", "invalid_token"), ("Bearer", "invalid_token"), ("Basic dXNlcjpwYXNz", "missing_token"),
        ])
    func bearerShapes(_ header: String, _ reason: String) throws {
        let world = try HTTPWorld()
        let response = world.app.router.respond(
            to: Self.request("GET", "/v1/authorize", headers: [HTTPHeader(name: "Authorization", value: header)]))
        #expect(response.status == 401)
        #expect(Self.body(response)["reason"] as? String == reason)
        let challenge = response.headers.first { $0.name == "WWW-Authenticate" }?.value
        #expect(challenge == (reason == "invalid_token" ? #"Bearer error="invalid_token""# : "Bearer"))
    }

    @Test("X-Forwarded-For names the client only when the peer is a trusted proxy")
    func trustedProxy() throws {
        func challenges(_ world: HTTPWorld, from forwarded: String) -> Int {
            let request = Self.request(
                "POST", "/v1/challenge", json: #"{"client_id":"\#(world.integration.clientID)"}"#,
                headers: [HTTPHeader(name: "X-Forwarded-For", value: forwarded)])
            return world.app.router.respond(to: request).status
        }
        let trusting = try HTTPWorld {
            $0.perAddress = RateLimit(perSecond: 0.001, burst: 1)
            $0.trustedProxies = ["127.0.0.1/32"]
        }
        // Each forwarded address has its own bucket of one.
        #expect(challenges(trusting, from: "203.0.113.7") == 200)
        #expect(challenges(trusting, from: "203.0.113.8") == 200)
        #expect(challenges(trusting, from: "198.51.100.1, 203.0.113.7") == 429)
        let line = try #require(trusting.sink.lines.withLock { $0 }.last { $0.contains(#""route":"challenge""#) })
        #expect(line.contains(#""remote":"203.0.113.7""#))

        let untrusting = try HTTPWorld { $0.perAddress = RateLimit(perSecond: 0.001, burst: 1) }
        // The header is ignored: both requests share 127.0.0.1's bucket; attestd says why once.
        #expect(challenges(untrusting, from: "203.0.113.7") == 200)
        #expect(challenges(untrusting, from: "203.0.113.8") == 429)
        #expect(untrusting.sink.lines.withLock { $0 }.filter { $0.contains("every client shares the proxy's bucket") }.count == 1)
    }

    @Test("a malformed assertion gets a byte-identical answer for a registered and for an unknown key")
    func malformedAssertionNoOracle() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        let registered = try SyntheticDevice()
        _ = try world.attest(client, device: registered)
        let stranger = try SyntheticDevice()
        let emptySignature: [UInt8] =
            [0xA2, 0x69] + Array("signature".utf8) + [0x40, 0x71] + Array("authenticatorData".utf8) + [0x58, 0x25]
            + [UInt8](repeating: 0, count: 37)
        for object in [[0xFF], [0xA0], emptySignature] as [[UInt8]] {
            var answers: [String] = []
            for device in [registered, stranger] {
                let challenge = try world.challenge(client).text
                let body = JSONText.object([
                    ("client_id", world.integration.clientID), ("key_id", Base64Text.encode(device.keyID)),
                    ("assertion", Base64Text.encode(object)), ("challenge", challenge),
                ])
                let response = world.app.router.respond(to: Self.request("POST", "/v1/token", json: body))
                answers.append("\(response.status) " + String(decoding: response.body, as: UTF8.self))
            }
            #expect(answers[0] == answers[1], "\(Hex.encode(object))")
            // The parse answer, not the bad-signature one an unknown key used to get.
            #expect(!answers[0].contains(#""reason":"signature""#), "\(answers[0])")
        }
    }

    @Test("RFC 7009: /v1/revoke kills one token at once, answers 200 for any token, and 401 without the gateway secret")
    func tokenRevocation() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        let token = try world.attest(client, device: try SyntheticDevice())
        let other = try world.attest(client, device: try SyntheticDevice())
        func revoke(_ form: String, secret: String?) -> HTTPResponse {
            var headers = [HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded")]
            if let secret { headers.append(HTTPHeader(name: "Authorization", value: "Bearer \(secret)")) }
            return world.app.router.respond(to: HTTPRequest(method: "POST", path: "/v1/revoke", headers: headers, body: Array(form.utf8)))
        }
        #expect(revoke("token=\(token)", secret: nil).status == 401)
        #expect(revoke("token=\(token)", secret: "not-the-gateway-secret-at-all").status == 401)
        #expect(try world.authorize(client, token: token).status == 200)
        #expect(revoke("token=\(token)", secret: world.gatewaySecret).status == 200)
        #expect(try world.authorize(client, token: token).status == 401)
        #expect(try world.authorize(client, token: other).status == 200)
        for garbage in ["token=nonsense", "token=\(token)", "token=" + String(repeating: "a", count: 5000)] {
            #expect(revoke(garbage, secret: world.gatewaySecret).status == 200)
        }
    }

    @Test("a suspended integration is refused with 403 integration_suspended, and its tokens work again on resume")
    func suspension() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        let token = try world.attest(client, device: try SyntheticDevice())
        #expect(try world.admin.setSuspended(clientID: world.integration.clientID, true) == true)
        #expect(try world.authorize(client, token: token).status == 401)
        let challenge = world.app.router.respond(
            to: Self.request("POST", "/v1/challenge", json: #"{"client_id":"\#(world.integration.clientID)"}"#))
        #expect(challenge.status == 403)
        #expect(Self.body(challenge)["code"] as? String == "integration_suspended")
        #expect(try world.admin.setSuspended(clientID: world.integration.clientID, false) == true)
        #expect(try world.authorize(client, token: token).status == 200)
    }

    @Test("takes a sane X-Request-Id from a trusted proxy (nginx's $request_id) and makes its own otherwise")
    func forwardedRequestID() throws {
        let world = try HTTPWorld { $0.trustedProxies = ["127.0.0.1/32"] }
        let nginxID = "0123456789abcdef0123456789abcdef"
        // A client's own is never adopted: it could pass for another request in the logs.
        let fromClient = world.app.router.respond(
            to: HTTPRequest(
                method: "GET", path: "/healthz", headers: [HTTPHeader(name: "X-Request-Id", value: nginxID)], remoteAddress: "192.0.2.1"))
        #expect(fromClient.headers.first { $0.name == "X-Request-Id" }?.value != nginxID)
        let taken = world.app.router.respond(
            to: Self.request("GET", "/healthz", headers: [HTTPHeader(name: "X-Request-Id", value: nginxID)]))
        #expect(taken.headers.first { $0.name == "X-Request-Id" }?.value == nginxID)
        let refused = world.app.router.respond(
            to: Self.request("GET", "/healthz", headers: [HTTPHeader(name: "X-Request-Id", value: "bad id\nwith newline")]))
        #expect(refused.headers.first { $0.name == "X-Request-Id" }?.value != "bad id\nwith newline")
        _ = world.app.router.respond(
            to: Self.request("GET", "/v1/authorize", headers: [HTTPHeader(name: "X-Request-Id", value: nginxID)]))
        #expect(world.sink.all.contains(#""request.id":"\#(nginxID)""#))
    }

    @Test("with --log-success-every 0 successful gateway lines are dropped and every failure stays")
    func successSampling() throws {
        let world = try HTTPWorld { $0.logSuccessEvery = 0 }
        let client = try world.client()
        let token = try world.attest(client, device: try SyntheticDevice())
        for _ in 0..<5 { #expect(try world.authorize(client, token: token).status == 200) }
        #expect(try world.authorize(client, token: "atk_nope").status == 401)
        let lines = world.sink.lines.withLock { $0 }.filter { $0.contains(#""route":"authorize""#) }
        #expect(lines.count == 1)
        #expect(lines.first?.contains(#""status":401"#) == true)
        #expect(world.sink.all.contains(#""route":"attest""#))
    }

    @Test("a scrape reads the counts the purge tick made and counts no rows itself")
    func scrapeReadsCache() throws {
        let world = try HTTPWorld()
        world.app.refreshStatistics()
        func gauge(_ name: String) -> String? {
            let text = String(decoding: world.app.router.respond(to: Self.request("GET", "/metrics")).body, as: UTF8.self)
            return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.map { String($0.dropFirst(name.count + 1)) }
        }
        #expect(gauge("attestd_active_integrations") == "1")
        _ = try world.admin.create(
            workspaceID: "ws2", name: "second", teamID: "ABCDE12345", bundleIDs: ["com.example.x"], environments: [.production])
        #expect(gauge("attestd_active_integrations") == "1")
        world.app.refreshStatistics()
        #expect(gauge("attestd_active_integrations") == "2")
    }
}

@Suite("Trusted proxy networks")
struct IPNetworkTests {
    @Test(
        "CIDR networks match their addresses only",
        arguments: [
            ("127.0.0.1/32", "127.0.0.1", true), ("127.0.0.1/32", "127.0.0.2", false), ("10.0.0.0/8", "10.200.1.1", true),
            ("10.0.0.0/8", "11.0.0.1", false), ("::1/128", "::1", true), ("::1/128", "127.0.0.1", false),
            ("2001:db8::/32", "2001:db8:1::5", true), ("0.0.0.0/0", "192.0.2.1", true), ("127.0.0.1/32", "::ffff:127.0.0.1", true),
        ])
    func contains(_ network: String, _ address: String, _ expected: Bool) throws {
        #expect(try #require(IPNetwork(network)).contains(address) == expected)
    }

    @Test(
        "malformed networks are refused",
        arguments: ["", "10.0.0.0/33", "10.0.0/8", "::1/129", "localhost/32", "10.0.0.0/-1", "1.2.3.4/8x"])
    func refused(_ text: String) {
        #expect(IPNetwork(text) == nil)
    }
}
