import AttestCrypto
import AttestHTTPServer
import AttestTesting
import Testing

/// Revocations through `/v1/revoke` leave a trace (decision 0025): the log line names a prefix of
/// the token's SHA-256 and, for a live token, its client ID; the answer still says nothing.
@Suite("/v1/revoke: the log line")
struct RevocationLogTests {
    @Test("a revoked live token's line has its hash prefix, client ID and outcome revoked; another token's says no_live_token")
    func logLine() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        let token = try world.attest(client, device: try SyntheticDevice())
        func revoke(_ token: String) -> HTTPResponse {
            let headers = [
                HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded"),
                HTTPHeader(name: "Authorization", value: "Bearer \(world.gatewaySecret)"),
            ]
            return world.app.router.respond(
                to: HTTPRequest(method: "POST", path: "/v1/revoke", headers: headers, body: Array("token=\(token)".utf8)))
        }
        let prefix = String(Hex.encode(Digest.sha256(Array(token.utf8))).prefix(16))
        #expect(revoke(token).status == 200)
        let line = try #require(world.sink.lines.withLock { $0 }.last { $0.contains(#""route":"revoke""#) })
        #expect(line.contains(#""token.sha256_prefix":"\#(prefix)""#), "\(line)")
        #expect(line.contains(#""client.id":"\#(world.integration.clientID)""#), "\(line)")
        #expect(line.contains(#""outcome":"revoked""#), "\(line)")
        #expect(!line.contains(token))
        // The same token again: nothing live, so no client ID; the answer is the same 200.
        #expect(revoke(token).status == 200)
        let again = try #require(world.sink.lines.withLock { $0 }.last { $0.contains(#""route":"revoke""#) })
        #expect(again.contains(#""token.sha256_prefix":"\#(prefix)""#) && again.contains(#""outcome":"no_live_token""#), "\(again)")
        #expect(!again.contains("client.id"))
    }
}

/// A device's attest and refresh lines name its key ID, so that a misbehaving device can be found
/// in the log without SQL; a request whose key ID does not decode names none.
@Suite("Device request log lines")
struct DeviceLogLineTests {
    @Test("attest and refresh lines carry device.key_id (64 hex digits); a malformed key ID is not logged")
    func keyIDInLine() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        var device = try SyntheticDevice()
        _ = try world.attest(client, device: device)
        let keyID = Hex.encode(device.keyID)
        let attested = try #require(world.sink.lines.withLock { $0 }.last { $0.contains(#""route":"attest""#) })
        #expect(attested.contains(#""device.key_id":"\#(keyID)""#), "\(attested)")
        let refreshed = try client.postJSON("/v1/token", try world.refreshBody(client, device: &device))
        #expect(refreshed.status == 200)
        let line = try #require(world.sink.lines.withLock { $0 }.last { $0.contains(#""route":"token""#) })
        #expect(line.contains(#""device.key_id":"\#(keyID)""#), "\(line)")
        let (challenge, _) = try world.challenge(client)
        let malformed = try client.postJSON(
            "/v1/attest",
            #"{"client_id":"\#(world.integration.clientID)","key_id":"bm90LWEta2V5","attestation":"AAAA","challenge":"\#(challenge)"}"#)
        #expect(malformed.status == 400)
        let refused = try #require(world.sink.lines.withLock { $0 }.last { $0.contains(#""route":"attest""#) })
        #expect(!refused.contains("device.key_id"), "\(refused)")
    }
}
