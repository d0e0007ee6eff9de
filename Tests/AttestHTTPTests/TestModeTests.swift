import AttestCrypto
import AttestHTTP
import AttestServer
import AttestService
import AttestTesting
import Foundation
import Testing

@Suite("--insecure-test-mode: off by default, loopback only, loud")
struct TestModeTests {
    @Test("without the flag the /test/ routes do not exist and short challenges are refused")
    func offByDefault() throws {
        let world = try HTTPWorld()
        let client = try world.client()
        #expect(try client.postJSON("/test/clock", #"{"now":"1611404013"}"#).status == 404)
        #expect(
            try client.postJSON("/test/challenge", #"{"client_id":"\#(world.integration.clientID)","challenge":"d3VyemVscGZyb3Bm"}"#).status
                == 404)
        #expect(world.json(try client.request("GET", "/healthz"))["test_mode"] as? Bool == false)
    }

    @Test("is refused on a non-loopback address and has no environment variable")
    func loopbackOnly() throws {
        #expect(throws: ServerConfiguration.UsageError.self) {
            try ServerConfiguration.parse(["--listen", "0.0.0.0:8080", "--insecure-test-mode"], environment: [:])
        }
        #expect(try ServerConfiguration.parse([], environment: ["ATTESTD_INSECURE_TEST_MODE": "1"]).insecureTestMode == false)
        #expect(try ServerConfiguration.parse(["--insecure-test-mode"], environment: [:]).insecureTestMode)
    }

    @Test("replays a recorded iOS 14.4 attestation and its assertion against Apple's root at the recorded time")
    func replaysRecordedDevice() throws {
        let attestation = try Fixtures.recordedCase("veehaitch_ios-14.4_attestation")
        let assertion = try Fixtures.recordedCase("veehaitch_ios-14.4_assertion")
        let world = try HTTPWorld {
            $0.trustAnchorFile = nil
            $0.insecureTestMode = true
        }
        #expect(world.sink.all.contains("INSECURE TEST MODE"))
        let client = try world.client()
        let integration = try world.admin.create(
            workspaceID: "ws_recorded", name: "veehaitch", teamID: attestation.teamID, bundleIDs: [attestation.bundleID],
            environments: [.development])
        let clientData = Base64Text.encode(try #require(RecordedCase.bytes(attestation.clientDataB64)), .url)
        #expect(try client.postJSON("/test/clock", #"{"now":"\#(try #require(attestation.verifyAtUnix))"}"#).status == 200)
        #expect(
            try client.postJSON("/test/challenge", #"{"client_id":"\#(integration.clientID)","challenge":"\#(clientData)"}"#).status == 200)
        let attested = try client.postJSON(
            "/v1/attest",
            #"{"client_id":"\#(integration.clientID)","key_id":"\#(attestation.keyIDB64 ?? "")","attestation":"\#(attestation.objectB64 ?? "")","challenge":"\#(clientData)"}"#
        )
        #expect(attested.status == 200, "\(attested.text)")
        let token = try #require(world.json(attested)["access_token"] as? String)
        #expect(try world.authorize(client, token: token).header("X-Workspace-Id") == "ws_recorded")

        #expect(
            try client.postJSON("/test/challenge", #"{"client_id":"\#(integration.clientID)","challenge":"\#(clientData)"}"#).status == 200)
        let refreshed = try client.postJSON(
            "/v1/token",
            #"{"client_id":"\#(integration.clientID)","key_id":"\#(assertion.keyIDB64 ?? "")","assertion":"\#(assertion.objectB64 ?? "")","challenge":"\#(clientData)"}"#
        )
        #expect(refreshed.status == 200, "\(refreshed.text)")
        let keyID = try #require(attestation.keyID)
        #expect(try world.app.store.device(keyID: keyID)?.counter == 1)
    }
}
