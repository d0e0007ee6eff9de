import AttestCore
import AttestCrypto
import AttestHTTP
import AttestServer
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

@Suite("attestd over real HTTP (port 0, synthetic devices)")
struct APITests {
    @Test("challenge, attest, authorize, introspect, refresh by assertion, revoke", arguments: StoreBackend.available)
    func wholeFlow(_ backend: StoreBackend) throws {
        let world = try HTTPWorld(backend)
        let client = try world.client()
        var device = try SyntheticDevice()

        let attest = try client.postJSON("/v1/attest", try world.attestBody(client, device: device))
        #expect(attest.status == 200)
        #expect(attest.header("Content-Type") == "application/json")
        #expect(attest.header("Cache-Control") == "no-store")
        let body = world.json(attest)
        let token = try #require(body["access_token"] as? String)
        #expect(body["token_type"] as? String == "Bearer")
        #expect(body["expires_in"] as? Int == 3600)
        #expect(body["scope"] as? String == "messages")
        #expect(body["workspace_id"] as? String == "ws_http")
        #expect(Set(body.keys) == ["access_token", "token_type", "expires_in", "scope", "workspace_id"])

        let authorized = try world.authorize(client, token: token)
        #expect(authorized.status == 200)
        #expect(authorized.header("X-Workspace-Id") == "ws_http")
        #expect(authorized.header("X-Client-Id") == world.integration.clientID)

        let introspected = world.json(try world.introspect(client, token: token))
        #expect(introspected["active"] as? Bool == true)
        #expect(introspected["scope"] as? String == "messages")
        #expect(introspected["client_id"] as? String == world.integration.clientID)
        #expect(introspected["workspace_id"] as? String == "ws_http")
        #expect(introspected["token_type"] as? String == "Bearer")
        let iat = try #require(introspected["iat"] as? Int)
        #expect(introspected["exp"] as? Int == iat + 3600)

        let refreshed = try client.postJSON("/v1/token", try world.refreshBody(client, device: &device))
        #expect(refreshed.status == 200)
        let second = try #require(world.json(refreshed)["access_token"] as? String)
        #expect(second != token)

        let summary = try world.admin.revoke(clientID: world.integration.clientID)
        #expect(summary?.tokensRevoked == 2)
        for revoked in [token, second] {
            let denied = try world.authorize(client, token: revoked)
            #expect(denied.status == 401)
            #expect(denied.header("WWW-Authenticate") == #"Bearer error="invalid_token""#)
            #expect(try world.introspect(client, token: revoked).text == #"{"active":false}"#)
        }
        let challenge = try client.postJSON("/v1/challenge", #"{"client_id":"\#(world.integration.clientID)"}"#)
        #expect(challenge.status == 403)
        #expect(world.json(challenge)["code"] as? String == "integration_revoked")
    }

    @Test("answers each error with its documented status, code and problem+json")
    func errorTable() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        let device = try SyntheticDevice()
        let clientID = world.integration.clientID
        func check(
            _ response: RawHTTPResponse, _ status: Int, _ code: String, _ reason: String? = nil,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
            #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
            let body = world.json(response)
            #expect(body["code"] as? String == code, sourceLocation: sourceLocation)
            #expect(body["status"] as? Int == status, sourceLocation: sourceLocation)
            if let reason { #expect(body["reason"] as? String == reason, sourceLocation: sourceLocation) }
        }
        check(try client.postJSON("/v1/challenge", "{not json"), 400, "malformed_request", "json")
        check(try client.postJSON("/v1/challenge", #"{"client_id":"a","client_id":"b"}"#), 400, "malformed_request", "json_duplicate_key")
        check(try client.postJSON("/v1/challenge", #"{"client_id":1}"#), 400, "malformed_request", "json")
        check(try client.postJSON("/v1/challenge", "{}"), 400, "malformed_request", "missing_client_id")
        check(
            try client.request("POST", "/v1/challenge", headers: [("Content-Type", "text/plain")], body: Array("{}".utf8)), 415,
            "unsupported_media_type")
        check(try client.postJSON("/v1/challenge", #"{"client_id":"clid_00000000000000000000000000000000"}"#), 404, "integration_not_found")
        check(try client.postJSON("/v1/challenge", #"{"client_id":"clid_unknown"}"#), 400, "malformed_request", "client_id")
        check(try client.request("GET", "/v1/challenge"), 405, "method_not_allowed")
        check(try client.request("GET", "/v2/nothing"), 404, "not_found")

        var body = try world.attestBody(client, device: device)
        check(
            try client.postJSON("/v1/attest", body.replacingOccurrences(of: #""key_id":""#, with: #""key_id":"AA"#)), 400,
            "malformed_request", "key_id")
        let (text, _) = try world.challenge(client)
        check(
            try client.postJSON(
                "/v1/attest",
                #"{"client_id":"\#(clientID)","key_id":"\#(Data(device.keyID).base64EncodedString())","attestation":"oQ==","challenge":"\#(text)"}"#
            ), 400, "malformed_request", "cbor_not_well_formed")
        body = try world.attestBody(client, device: device) { $0.signCount = 3 }
        check(try client.postJSON("/v1/attest", body), 401, "attestation_rejected", "counter_not_zero")
        check(try client.postJSON("/v1/attest", body), 401, "invalid_challenge", "challenge_used")
        _ = try world.attest(client, device: device)
        check(try client.postJSON("/v1/attest", try world.attestBody(client, device: device)), 409, "key_already_registered")

        var stranger = try SyntheticDevice()
        check(try client.postJSON("/v1/token", try world.refreshBody(client, device: &stranger)), 401, "assertion_rejected", "signature")
        check(try world.authorize(client, token: "atk_nonsense"), 401, "invalid_token")
        check(try world.introspect(client, token: "x", secret: "wrong-secret-wrong-secret"), 401, "unauthorized")

        let revokedWorld = try HTTPWorld()
        let revokedClient = try revokedWorld.client()
        _ = try revokedWorld.admin.revoke(clientID: revokedWorld.integration.clientID)
        check(
            try revokedClient.postJSON("/v1/challenge", #"{"client_id":"\#(revokedWorld.integration.clientID)"}"#), 403,
            "integration_revoked")
    }

    @Test("answers 429 with Retry-After once a client address is over its rate")
    func rateLimited() throws {
        // One request per 10 s: a second that turns between the requests refills a tenth of one.
        let world = try HTTPWorld { $0.perAddress = RateLimit(perSecond: 0.1, burst: 2) }
        let client = try world.client()
        let payload = #"{"client_id":"\#(world.integration.clientID)"}"#
        #expect(try client.postJSON("/v1/challenge", payload).status == 200)
        #expect(try client.postJSON("/v1/challenge", payload).status == 200)
        let limited = try client.postJSON("/v1/challenge", payload)
        #expect(limited.status == 429)
        #expect((9...10).contains(Int(limited.header("Retry-After") ?? "") ?? 0), "the wait for the next whole request")
        #expect(world.json(limited)["code"] as? String == "rate_limited")
    }

    @Test("answers a connection over --connections-per-address with 503 too_many_connections and Retry-After, and counts it")
    func overConnectionCap() throws {
        let world = try HTTPWorld(listening: true) { $0.connectionsPerAddress = 1 }
        var held: RawHTTPClient? = try world.socketClient()
        #expect(try held?.request("GET", "/healthz").status == 200)
        let over = try world.socketClient()
        let answer = try over.request("GET", "/healthz")
        #expect(answer.status == 503)
        #expect(answer.header("Retry-After") == "1")
        #expect(answer.header("Content-Type") == "application/problem+json")
        #expect(world.json(answer)["code"] as? String == "too_many_connections")
        #expect(world.json(answer)["reason"] as? String == "connections_per_address")
        #expect(over.isClosedByServer())
        held = nil
        let (response, refusedMeanwhile) = try eventuallyAnswered(world)
        let metrics = try #require(String(bytes: response.body, encoding: .utf8))
        #expect(metrics.contains(#"attestd_connections_refused_total{reason="per_address"} \#(1 + refusedMeanwhile)"#))
    }

    @Test("a trusted proxy is not capped as one client: its connections past --connections-per-address are served")
    func trustedProxyNotCapped() throws {
        let world = try HTTPWorld(listening: true) {
            $0.connectionsPerAddress = 1
            $0.trustedProxies = ["127.0.0.1/32"]
        }
        let clients = try (0..<4).map { _ in try world.client() }
        for client in clients { #expect(try client.request("GET", "/healthz").status == 200) }
        let metrics = try world.client().request("GET", "/metrics").text
        #expect(metrics.contains(#"attestd_connections_refused_total{reason="per_address"} 0"#))
    }

    @Test(
        "a balancer trusted with --trusted-proxy and the default per-address limits: 100 challenges for 100 forwarded clients all 200, one forwarded client held to its own limit, 200 connections from the balancer all served"
    )
    func trustedBalancerOneRule() throws {
        // The several-nodes recipe of docs/OPERATIONS.md: the balancer's address trusted, nothing else changed.
        let world = try HTTPWorld(listening: true) {
            $0.perAddress = ServerConfiguration().perAddress
            $0.connectionsPerAddress = ServerConfiguration().connectionsPerAddress
            $0.trustedProxies = ["127.0.0.1/32"]
        }
        let balancer = try world.client()
        func challenge(from client: String) throws -> Int {
            try balancer.postJSON(
                "/v1/challenge", #"{"client_id": "\#(world.integration.clientID)"}"#, headers: [("X-Forwarded-For", client)]
            ).status
        }
        let spread = try (0..<100).map { try challenge(from: "198.51.100.\($0 + 1)") }
        #expect(spread.allSatisfy { $0 == 200 }, "\(Dictionary(grouping: spread, by: { $0 }).mapValues(\.count))")
        let one = try (0..<100).map { _ in try challenge(from: "203.0.113.9") }
        #expect(one.contains(429), "one forwarded client keeps its own limit")
        #expect(one.prefix(40).allSatisfy { $0 == 200 }, "its burst of 40 is its own")
        let connections = try (0..<200).map { _ in try world.client() }
        let served = try connections.map { try $0.request("GET", "/healthz").status }
        #expect(served.filter { $0 == 200 }.count == 200)
    }

    /// GET /metrics once the held connection's close has reached the server (a new one is admitted),
    /// with how many tries were refused before: answered 503, or closed at accept while the
    /// server still counted the closed connections (past twice the cap; counted all the same).
    private func eventuallyAnswered(_ world: HTTPWorld) throws -> (RawHTTPResponse, Int) {
        var attempts = 0
        var answered: RawHTTPResponse?
        _ = eventually(within: 2) {
            if let response = try? world.client().request("GET", "/metrics"), response.status == 200 { answered = response }
            attempts += answered == nil ? 1 : 0
            return answered != nil
        }
        guard let answered else { throw RawHTTPClientError("/metrics stayed over the connection cap") }
        return (answered, attempts)
    }

    @Test("blocks a key of a revoked integration from attesting under another integration (403 device_blocked)")
    func deviceBlocked() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        let device = try SyntheticDevice()
        _ = try world.attest(client, device: device)
        _ = try world.admin.revoke(clientID: world.integration.clientID)
        let second = try world.admin.create(
            workspaceID: "ws_second", name: "Second", teamID: "ABCDE12345", bundleIDs: ["com.example.messages"], environments: [.production]
        )
        let (text, bytes) = try world.challenge(client, clientID: second.clientID)
        let parts = device.attestationParts(
            appID: world.appID, environment: .production, clientDataHash: Digest.sha256(bytes), time: Int64(Date().timeIntervalSince1970))
        let object = try device.attestationObject(parts, pki: world.pki)
        let response = try client.postJSON(
            "/v1/attest",
            #"{"client_id":"\#(second.clientID)","key_id":"\#(Data(device.keyID).base64EncodedString())","attestation":"\#(Data(object).base64EncodedString())","challenge":"\#(text)"}"#
        )
        #expect(response.status == 403)
        #expect(world.json(response)["code"] as? String == "device_blocked")
    }

    @Test("answers 503 with Retry-After while another writer holds the database past the busy timeout, then recovers (S3)")
    func storageBusy() throws {
        let world = try HTTPWorld { $0.busyTimeoutMilliseconds = 100 }
        let client = try world.client()
        let payload = #"{"client_id":"\#(world.integration.clientID)"}"#
        let holder = try SQLiteDatabase(path: world.sqliteFile.path)
        try holder.execute("PRAGMA user_version")  // open the file before taking the lock
        let busy: RawHTTPResponse = try holder.immediateTransaction {
            try holder.execute("UPDATE integrations SET name = name WHERE 0")
            return try client.postJSON("/v1/challenge", payload)
        }
        #expect(busy.status == 503)
        #expect(busy.header("Retry-After") == "1")
        #expect(world.json(busy)["code"] as? String == "storage_unavailable")
        #expect(!busy.text.contains("SQLITE"))
        #expect(try client.postJSON("/v1/challenge", payload).status == 200)
    }

    @Test("while the database is unavailable, 20 failing requests write one error line and one request line, not 40")
    func outageLinesHeldBack() throws {
        let world = try HTTPWorld { $0.busyTimeoutMilliseconds = 20 }
        let client = try world.client()
        let payload = #"{"client_id":"\#(world.integration.clientID)"}"#
        let holder = try SQLiteDatabase(path: world.sqliteFile.path)
        try holder.execute("PRAGMA user_version")
        let statuses: [Int] = try holder.immediateTransaction {
            try holder.execute("UPDATE integrations SET name = name WHERE 0")
            return try (0..<20).map { _ in try client.postJSON("/v1/challenge", payload).status }
        }
        #expect(statuses == Array(repeating: 503, count: 20))
        let lines = world.sink.lines.withLock { $0 }
        let causes = lines.filter { $0.contains(#""msg":"storage unavailable""#) }
        let requests = lines.filter { $0.contains(#""msg":"request""#) && $0.contains(#""status":503"#) }
        #expect(causes.count == 1)
        #expect(causes.first?.contains(#""level":"error""#) == true)
        #expect(requests.count == 1)
        #expect(requests.first?.contains(#""level":"warning""#) == true)
        #expect(requests.first?.contains(#""repeated":0"#) == true)
        // A client error is a warning too, and never held back.
        for _ in 0..<3 {
            #expect(try client.postJSON("/v1/challenge", #"{"client_id":"clid_unknown"}"#).status >= 400)
        }
        let refused = world.sink.lines.withLock { $0 }.filter { $0.contains(#""msg":"request""#) && $0.contains(#""status":4"#) }
        #expect(refused.count == 3)
        #expect(refused.allSatisfy { $0.contains(#""level":"warning""#) })
    }

    @Test("refuses a body over 64 KiB before reading it (413)")
    func oversizedBody() throws {
        let world = try HTTPWorld(listening: true)
        let client = try world.socketClient()
        try client.send("POST /v1/attest HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10485760\r\n\r\n")
        #expect(try client.receiveResponse().status == 413)
    }

    @Test("introspection without a configured gateway secret always answers 401")
    func noGatewaySecret() throws {
        let world = try HTTPWorld { $0.gatewaySecretFile = nil }
        let client = try world.client()
        let token = try world.attest(client, device: try SyntheticDevice())
        #expect(try world.introspect(client, token: token).status == 401)
        #expect(try world.authorize(client, token: token).status == 200)
    }

    @Test("refuses two Authorization headers and non-Bearer schemes (T4)")
    func authorizationShapes() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        let token = try world.attest(client, device: try SyntheticDevice())
        #expect(
            try client.request(
                "GET", "/v1/authorize", headers: [("Authorization", "Bearer \(token)"), ("Authorization", "Bearer \(token)")]
            ).status == 401)
        #expect(try client.request("GET", "/v1/authorize", headers: [("Authorization", "Basic \(token)")]).status == 401)
        #expect(try client.request("GET", "/v1/authorize", headers: [("Authorization", token)]).status == 401)
        #expect(
            try client.request("GET", "/v1/authorize", headers: [("Authorization", "Bearer " + String(repeating: "a", count: 10_000))])
                .status == 401)
        #expect(try client.request("GET", "/v1/authorize", headers: [("Authorization", "bearer \(token)")]).status == 200)
    }

    @Test("of 50 simultaneous attestations with one challenge exactly one succeeds")
    func parallelChallenge() throws {
        let world = try HTTPWorld(listening: true)
        let client = try world.client()
        let (text, bytes) = try world.challenge(client)
        var bodies: [String] = []
        for _ in 0..<50 {
            let device = try SyntheticDevice()
            let parts = device.attestationParts(
                appID: world.appID, environment: .production, clientDataHash: Digest.sha256(bytes),
                time: Int64(Date().timeIntervalSince1970))
            let object = try device.attestationObject(parts, pki: world.pki)
            bodies.append(
                #"{"client_id":"\#(world.integration.clientID)","key_id":"\#(Data(device.keyID).base64EncodedString())","attestation":"\#(Data(object).base64EncodedString())","challenge":"\#(text)"}"#
            )
        }
        let port = world.server.http.port
        let requests = bodies
        let statuses = simultaneously(50) { index in
            (try? RawHTTPClient(port: port).postJSON("/v1/attest", requests[index]).status) ?? -1
        }
        #expect(statuses.filter { $0 == 200 }.count == 1)
        #expect(statuses.filter { $0 == 401 }.count == 49)
    }

    @Test("of 50 simultaneous assertions with the same counter exactly one mints a token")
    func parallelCounter() throws {
        let world = try HTTPWorld(listening: true)
        let client = try world.client()
        var device = try SyntheticDevice()
        _ = try world.attest(client, device: device)
        var bodies: [String] = []
        for _ in 0..<50 { bodies.append(try world.refreshBody(client, device: &device, counter: 1)) }
        let port = world.server.http.port
        let requests = bodies
        let statuses = simultaneously(50) { index in
            (try? RawHTTPClient(port: port).postJSON("/v1/token", requests[index]).status) ?? -1
        }
        #expect(statuses.filter { $0 == 200 }.count == 1)
        #expect(statuses.filter { $0 == 401 }.count == 49)
    }

    @Test("after revoking an integration with 1,000 outstanding tokens none authorizes on the next request (R1)")
    func revokeThousand() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        var device = try SyntheticDevice()
        var tokens = [try world.attest(client, device: device)]
        while tokens.count < 1000 {
            let response = try client.postJSON("/v1/token", try world.refreshBody(client, device: &device))
            tokens.append(try #require(world.json(response)["access_token"] as? String))
        }
        #expect(try world.authorize(client, token: tokens[500]).status == 200)
        let summary = try world.admin.revoke(clientID: world.integration.clientID)
        #expect(summary?.tokensRevoked == 1000)
        var accepted = 0
        for token in tokens where try world.authorize(client, token: token).status != 401 { accepted += 1 }
        #expect(accepted == 0)
    }

    @Test("no token, challenge or attestation bytes appear in the database files or the logs (T1, T8)")
    func secretsStayOut() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        var device = try SyntheticDevice()
        var tokens = [try world.attest(client, device: device)]
        var challenges: [String] = []
        for _ in 0..<10 {
            let body = try world.refreshBody(client, device: &device)
            challenges.append(String(body.split(separator: "\"").dropLast().last ?? ""))
            tokens.append(try #require(world.json(try client.postJSON("/v1/token", body))["access_token"] as? String))
            _ = try world.authorize(client, token: tokens.last ?? "")
            _ = try world.introspect(client, token: tokens.last ?? "")
        }
        let logs = world.sink.all
        #expect(logs.contains("\"route\":\"token\""))
        for token in tokens {
            #expect(!logs.contains(token))
            #expect(!logs.contains(String(token.dropFirst(4))))
        }
        for challenge in challenges where challenge.count == 43 { #expect(!logs.contains(challenge)) }
        #expect(!logs.contains(Data(device.keyID).base64EncodedString()))
        let folder = world.sqliteFile.deletingLastPathComponent()
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("attestd.sqlite") }
        #expect(files.contains("attestd.sqlite-wal"))
        for file in files {
            let contents = try Data(contentsOf: folder.appendingPathComponent(file))
            for token in tokens { #expect(contents.range(of: Data(token.utf8.dropFirst(4))) == nil, "\(file) holds a token") }
        }
    }

    @Test("reports a replaced trust anchor on /healthz and counts requests in /metrics")
    func healthAndMetrics() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        let health = world.json(try client.request("GET", "/healthz"))
        #expect(health["status"] as? String == "ok")
        #expect(health["trust_anchor"] as? String == "custom (test only)")
        #expect(world.sink.all.contains("TRUST ANCHOR REPLACED"))
        _ = try world.attest(client, device: try SyntheticDevice())
        world.app.refreshStatistics()  // what the purge timer does every --purge-interval
        let metrics = try client.request("GET", "/metrics").text
        #expect(metrics.contains(#"attestd_http_requests_total{route="attest",status="200"} 1"#))
        #expect(metrics.contains(#"attestd_verifications_total{kind="attestation",outcome="ok"} 1"#))
        #expect(metrics.contains(#"attestd_tokens_minted_total{kind="device"} 1"#))
        #expect(metrics.contains("attestd_active_devices 1"))
        #expect(metrics.contains("attestd_trust_anchor_is_apple 0"))
        // The anchors' expiry, for AttestdTrustAnchorExpiring: the synthetic root's (twenty years
        // on), and Apple Root CA - G3's (Apr 30 18:19:06 2039 GMT, `openssl x509 -enddate`).
        let rootNotAfter = try #require(world.pki.root.notAfter)
        #expect(rootNotAfter > Int64(Date().timeIntervalSince1970) + 19 * 365 * 86_400)
        let fingerprint = Hex.encode(world.pki.root.sha256Fingerprint)
        #expect(metrics.contains(#"attestd_trust_anchor_not_after_seconds{sha256="\#(fingerprint)",role="primary"} \#(rootNotAfter)"#))
        #expect(health["trust_anchor_sha256"] as? String == fingerprint)
        #expect(health["additional_root_sha256"] == nil)
        #expect(metrics.contains("attestd_receipt_anchor_not_after_seconds 2187800346\n"))
    }
}
