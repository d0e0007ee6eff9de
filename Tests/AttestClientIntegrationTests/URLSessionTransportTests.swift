import AttestClient
import AttestClientSimulator
import AttestTesting
import Foundation
import Glibc
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seconds since `start` on the monotonic clock.
private func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

// Over real sockets and URLSession, so time passes for real: every bound is loose (seconds,
// against timeouts several times shorter), as `swift test` runs other suites at the same time.
@Suite("AttestClient: calls that end, answers that are attestd's")
struct AttestClientBoundsTests {
    static func client(port: UInt16, device: any AppAttestDevice, keyStore: any KeyIDStore, budget: TimeInterval, timeout: TimeInterval)
        -> AttestClient
    {
        AttestClient(
            configuration: AttestClient.Configuration(
                baseURL: URL(string: "http://127.0.0.1:\(port)") ?? URL(fileURLWithPath: "/"),
                clientID: "clid_" + String(repeating: "a", count: 32),
                retryBudget: budget, requestTimeout: timeout),
            device: device, keyStore: keyStore)
    }

    @Test("a silent attestd: token() fails within the retry budget plus one request timeout, attested path and debug path alike")
    func silentServer() async throws {
        let world = try AppWorld()
        let silent = try SilentListener()
        let attested = Self.client(port: silent.port, device: try world.device(), keyStore: world.keyStore(), budget: 2, timeout: 1.5)
        let debug = AttestClient(
            configuration: AttestClient.Configuration(
                baseURL: URL(string: "http://127.0.0.1:\(silent.port)") ?? URL(fileURLWithPath: "/"), clientID: world.clientID,
                retryBudget: 2,
                requestTimeout: 1.5),
            debugToken: "dbg_" + String(repeating: "A", count: 43))
        for client in [attested, debug] {
            let start = ContinuousClock.now
            await #expect {
                _ = try await client.token()
            } throws: { error in
                // The session's own timeout (-1001) or the watchdog, whichever ends the request first.
                guard case .transport? = error as? AttestClientError else { return false }
                return true
            }
            let elapsed = seconds(since: start)
            #expect(elapsed >= 1.4 && elapsed < 2 + 1.5 + 2, "\(elapsed) s")  // budget + timeout, 2 s of slack
        }
    }

    @Test("an answer over 64 KiB, a challenge that is not 32 bytes and a token not of attestd's form are refused, nothing signed")
    func hostileAnswers() async throws {
        let world = try AppWorld()
        let device = try world.device()
        let huge = try CannedServer(answer: CannedServer.ok(Array(repeating: UInt8(ascii: " "), count: 1 << 20)))
        let short = try CannedServer(answer: CannedServer.ok(Array(#"{"challenge": "AAAAAAAAAAAAAAAAAAAAAA", "expires_in": 300}"#.utf8)))
        // The same without Content-Length: read until the connection closes, cut at the cap.
        let streamed = try CannedServer(
            answer: Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n".utf8)
                + Array(repeating: UInt8(ascii: " "), count: 1 << 20))
        for (server, expected) in [(huge, "over 65536"), (streamed, "over 65536"), (short, "not attestd's")] {
            let client = Self.client(port: server.port, device: device, keyStore: world.keyStore(), budget: 0, timeout: 5)
            await #expect {
                _ = try await client.token()
            } throws: { error in
                guard case .transport(let text)? = error as? AttestClientError else { return false }
                return text.contains(expected)
            }
        }
        #expect(try world.deviceKeys() == 0, "no key made, nothing signed")
        let forged = try CannedServer(answer: CannedServer.ok(Array(#"{"access_token": "atk_short", "expires_in": 3600}"#.utf8)))
        let debug = AttestClient(
            configuration: AttestClient.Configuration(
                baseURL: URL(string: "http://127.0.0.1:\(forged.port)") ?? URL(fileURLWithPath: "/"), clientID: world.clientID,
                retryBudget: 0),
            debugToken: "dbg_" + String(repeating: "A", count: 43))
        await #expect {
            _ = try await debug.token()
        } throws: { error in
            guard case .transport(let text)? = error as? AttestClientError else { return false }
            return text.contains("not attestd's")
        }
    }

    @Test("errors read as sentences with attestd's code and reason")
    func localizedErrors() {
        let refused = AttestClientError.rejected(status: 401, code: "invalid_debug_token", reason: "debug_token")
        #expect(refused.localizedDescription == "attestd refused the request: HTTP 401, invalid_debug_token/debug_token.")
        #expect("\(AttestClientError.deviceBlocked)".contains("device_blocked"))
        #expect(AttestClientError.rateLimited(retryAfter: 2.5).localizedDescription.contains("retry in 3 s"))
    }

    @Test("a redirection is not followed: the request's body goes nowhere else, and the 307 is attestd's refusal")
    func redirectNotFollowed() async throws {
        let world = try AppWorld()
        // Followed, the request would wait on the silent listener until its timeout (a transport error).
        let elsewhere = try SilentListener()
        let redirecting = try CannedServer(
            answer: Array(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:\(elsewhere.port)/v1/debug-token\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .utf8))
        let client = AttestClient(
            configuration: AttestClient.Configuration(
                baseURL: URL(string: "http://127.0.0.1:\(redirecting.port)") ?? URL(fileURLWithPath: "/"),
                clientID: world.clientID,
                retryBudget: 0, requestTimeout: 3),
            debugToken: "dbg_" + String(repeating: "A", count: 43))
        await #expect(throws: AttestClientError.rejected(status: 307, code: "", reason: "")) { _ = try await client.token() }
    }
}

/// The app's side only, for the tests of the URLSession transport against servers that are not
/// attestd: a simulated device and a key ID file in a temporary directory.
struct AppWorld {
    static let teamID = "ABCDE12345"
    static let bundleID = "com.example.messages"
    let directory: URL
    let clientID = "clid_" + String(repeating: "a", count: 32)

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attest-app-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    var stateDirectory: URL { directory.appendingPathComponent("simulator") }

    func device() throws -> SimulatedAppAttestDevice {
        try SimulatedAppAttestDevice(stateDirectory: stateDirectory, teamID: Self.teamID, bundleID: Self.bundleID)
    }

    func keyStore() -> FileKeyIDStore { FileKeyIDStore(url: directory.appendingPathComponent("app/key-id")) }

    /// The keys the simulated app holds.
    func deviceKeys() throws -> Int {
        let keys = stateDirectory.appendingPathComponent("devices/\(Self.teamID).\(Self.bundleID)")
        guard FileManager.default.fileExists(atPath: keys.path) else { return 0 }
        return try FileManager.default.contentsOfDirectory(atPath: keys.path).filter { $0.hasSuffix(".pem") }.count
    }
}
