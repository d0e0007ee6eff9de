import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// The real attestd on a PostgreSQL server that stops answering without closing anything
/// (decision 0015), made with a proxy in front of the test server that goes silent.
@Suite("attestd on a PostgreSQL that stops answering", .enabled(if: StoreBackend.available.contains(.postgresql)))
struct AttestdSilentDatabaseTests {
    @Test(
        "authorize, readyz and the device endpoints answer 503 with Retry-After within their deadlines; SIGHUP and SIGTERM are handled at once",
        .timeLimit(.minutes(2)))
    func silentDatabase() throws {
        let location = try TestStoreLocation(.postgresql)
        let store = try location.open(at: Int64(Date().timeIntervalSince1970), connections: 1)
        let clientID = "clid_" + String(repeating: "ab", count: 16)
        try store.insertIntegration(
            IntegrationRecord(
                clientID: clientID, workspaceID: "ws", name: "n", teamID: "ABCDE12345", bundleIDs: ["com.example.a"],
                environments: [.production], status: .active, createdAt: 0, revokedAt: nil), audit: nil)
        guard let match = location.argument.firstMatch(of: #/@127\.0\.0\.1:(\d+)/#), let upstream = UInt16(match.1) else {
            Issue.record("the test server's URI names no 127.0.0.1 port")
            return
        }
        let proxy = try SilentProxy(upstreamPort: upstream)
        defer { proxy.close() }
        let directory = try temporaryDirectory()
        let secret = directory.appendingPathComponent("gateway.secret")
        try "a-gateway-secret-of-enough-length\n".write(to: secret, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
        let attestd = try AttestdProcess(
            arguments: [
                "--listen", "127.0.0.1:0", "--threads", "4", "--purge-interval", "1", "--gateway-secret-file", secret.path, "--db",
                location.argument.replacingOccurrences(of: "@127.0.0.1:\(upstream)/", with: "@127.0.0.1:\(proxy.port)/"),
            ], directory: directory)
        let port = try #require(attestd.listeningPort())
        #expect(try RawHTTPClient(port: port).request("GET", "/readyz").status == 200)

        proxy.silence()
        usleep(1_500_000)  // a purge tick is now waiting for the silent database
        // The purge runs on a queue of its own: the signal handlers still run at once.
        kill(attestd.process.processIdentifier, SIGHUP)
        #expect(attestd.logShows("gateway secrets reloaded", within: 1.5), "SIGHUP waited for the purge")

        let requests: [(name: String, method: String, path: String, headers: [(String, String)], body: String, limit: Duration)] = [
            ("authorize", "GET", "/v1/authorize", [("Authorization", "Bearer atk_" + String(repeating: "A", count: 43))], "", .seconds(8)),
            ("readyz", "GET", "/readyz", [], "", .seconds(8)),
            ("challenge", "POST", "/v1/challenge", [("Content-Type", "application/json")], #"{"client_id":"\#(clientID)"}"#, .seconds(8)),
        ]
        let answers = Mutex<[String: (status: Int, retryAfter: String?, elapsed: Duration)]>([:])
        let group = DispatchGroup()
        for request in requests {
            group.enter()
            Thread {
                defer { group.leave() }
                let started = ContinuousClock.now
                guard let client = try? RawHTTPClient(port: port, receiveTimeoutSeconds: 30),
                    let response = try? client.request(
                        request.method, request.path, headers: request.headers, body: Array(request.body.utf8))
                else { return }
                answers.withLock { $0[request.name] = (response.status, response.header("Retry-After"), ContinuousClock.now - started) }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 30) == .success)
        for request in requests {
            let answer = answers.withLock { $0[request.name] }
            #expect(answer?.status == 503, "\(request.name): \(String(describing: answer))")
            #expect(answer?.retryAfter == "1", "\(request.name)")
            #expect((answer?.elapsed ?? .seconds(99)) < request.limit, "\(request.name): \(String(describing: answer?.elapsed))")
        }

        let stopping = ContinuousClock.now
        attestd.process.terminate()
        let (status, log) = attestd.finish(within: 15)
        #expect(status == 0)
        #expect(ContinuousClock.now - stopping < .seconds(5), "SIGTERM took \(ContinuousClock.now - stopping)")
        #expect(log.contains("draining"))
    }
}
