import AttestClient
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

/// Seconds since `start` on the monotonic clock.
private func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

// Serialized, and every bound on time is loose (seconds, against pauses and timeouts several times
// longer): `swift test` runs the other suites at the same time, and a busy machine stretches
// every step. Blocking work (starting attestd) runs on a thread of its own, never on the
// cooperative pool the client's tasks need.
@Suite("AttestClient retries within its budget and stops when cancelled", .serialized)
struct AttestClientRetryTests {
    @Test("attestd down and back within the retry budget: the first call waits for it and succeeds", arguments: StoreBackend.available)
    func downAndBack(backend: StoreBackend) async throws {
        let world = try ClientWorld(backend)
        try world.stop()
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        let start = ContinuousClock.now
        let restarted = DispatchSemaphore(value: 0)
        Thread {
            Thread.sleep(forTimeInterval: 1.5)
            #expect(throws: Never.self) { try world.start() }
            restarted.signal()
        }.start()
        let token = try await client.token()
        restarted.wait()
        #expect(token.value.hasPrefix("atk_"))
        #expect(seconds(since: start) >= 1.5)
        #expect(seconds(since: start) < 30 + 15)  // the budget, and at most one request's timeout past it
        #expect(try world.requests("attest", status: 200) == 1)
    }

    @Test("attestd down past the budget: transport is thrown when the budget is spent")
    func budgetSpent() async throws {
        let world = try ClientWorld()
        try world.stop()
        let client = world.client(device: try world.device(), keyStore: world.keyStore(), retryBudget: 2)
        let start = ContinuousClock.now
        await #expect {
            try await client.token()
        } throws: { error in
            guard case .transport = error as? AttestClientError else { return false }
            return true
        }
        #expect(seconds(since: start) > 0.5)  // it did retry
        #expect(seconds(since: start) < 2 + 5)
        #expect(try world.deviceKeys() == 0)
    }

    @Test("renewal during an outage: the token in hand is returned at once while it is valid; after expiry the outage is thrown")
    func renewalDuringOutage() async throws {
        let world = try ClientWorld()
        let client = world.client(device: try world.device(), keyStore: world.keyStore(), retryBudget: 10)
        let first = try await client.token()
        try world.stop()

        world.clock.advance(3600 - 100)  // within the margin, still valid
        let start = ContinuousClock.now
        #expect(try await client.token() == first)
        #expect(seconds(since: start) < 5)  // not the 10 s budget: one try, then the token in hand
        #expect(try await client.token() == first)

        world.clock.advance(200)  // expired
        await #expect {
            try await client.token()
        } throws: { error in
            guard case .transport = error as? AttestClientError else { return false }
            return true
        }
        try world.start()
        #expect(try await client.token() != first)
        #expect(try world.requests("attest") == 1)
    }

    @Test("429 honours Retry-After, within the budget; past it, rateLimited carries the Retry-After")
    func rateLimited() async throws {
        let world = try ClientWorld { $0.challengePerIntegration = RateLimit(perSecond: 0.5, burst: 1) }
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        _ = try await client.token()
        // The node's rate limiter counts whole seconds: however long the first call took, a
        // challenge of our own empties the bucket just before each call that must meet it full.
        let raw = try RawHTTPClient(port: world.port)
        let payload = #"{"client_id":"\#(world.integration.clientID)"}"#
        _ = try raw.postJSON("/v1/challenge", payload)
        var refused = try world.requests("challenge", status: 429)
        let start = ContinuousClock.now
        _ = try await client.token(forcingRefresh: true)  // its challenge is over the rate at first
        #expect(seconds(since: start) >= 1)
        #expect(try world.requests("challenge", status: 429) > refused)
        #expect(try world.requests("token", status: 200) == 1)

        let impatient = world.client(device: try world.device(), keyStore: world.keyStore(), retryBudget: 0.5)
        _ = try raw.postJSON("/v1/challenge", payload)
        refused = try world.requests("challenge", status: 429)
        await #expect {
            try await impatient.token()
        } throws: { error in
            guard case .rateLimited(let retryAfter?) = error as? AttestClientError else { return false }
            return retryAfter >= 1
        }
        #expect(try world.requests("challenge", status: 429) > refused)
    }

    @Test("503 storage_unavailable honours Retry-After: the call succeeds once attestd's database is free again")
    func storageUnavailable() async throws {
        let world = try ClientWorld { $0.busyTimeoutMilliseconds = 100 }
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        let locked = DispatchSemaphore(value: 0)
        let path = world.sqliteFile.path
        // Another writer holds SQLite's write lock (attestctl mid-transaction, or a backup) until
        // attestd has refused a challenge for it, and 0.5 s more (20 s at most).
        let holder = Thread {
            guard let database = try? SQLiteDatabase(path: path, create: false) else {
                locked.signal()
                return
            }
            _ = try? database.immediateTransaction {
                locked.signal()
                let deadline = ContinuousClock.now + .seconds(20)
                while (try? world.requests("challenge", status: 503)) ?? 0 == 0, ContinuousClock.now < deadline {
                    Thread.sleep(forTimeInterval: 0.05)
                }
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
        holder.start()
        locked.wait()
        _ = try await client.token()
        #expect(try world.requests("challenge", status: 503) >= 1)
        #expect(try world.requests("attest", status: 200) == 1)
    }

    @Test("cancelling the calling task stops a pause for Retry-After at once, and nothing is sent after")
    func cancellationStopsRetries() async throws {
        // One challenge per 4 s: the client's second challenge gets 429 with Retry-After 4.
        let world = try ClientWorld { $0.challengePerIntegration = RateLimit(perSecond: 0.25, burst: 1) }
        #expect(
            try RawHTTPClient(port: world.port).postJSON("/v1/challenge", #"{"client_id":"\#(world.integration.clientID)"}"#).status == 200)
        let device = HookedDevice(try world.device()) { _, _ in }
        let client = world.client(device: device, keyStore: world.keyStore())
        let call = Task { try await client.token() }
        try await waitUntil { try world.requests("challenge", status: 429) == 1 }
        let start = ContinuousClock.now
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(seconds(since: start) < 2)

        try await Task.sleep(nanoseconds: 5_000_000_000)  // past the Retry-After
        #expect(try world.requests("challenge") == 2)  // no retry went on in the background
        #expect(device.calls.count("generateKey") == 0)
        // The next call starts afresh.
        _ = try await client.token()
        #expect(try world.requests("attest", status: 200) == 1)
    }

    @Test("cancelling the calling task cancels its request at once (attestd accepted the connection and never answers)")
    func cancellationStopsARequest() async throws {
        let world = try ClientWorld()
        let silent = try SilentListener()
        let client = world.client(
            device: try world.device(), keyStore: world.keyStore(), baseURL: URL(string: "http://127.0.0.1:\(silent.port)"))
        let call = Task { try await client.token() }
        try await Task.sleep(nanoseconds: 500_000_000)
        let start = ContinuousClock.now
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(seconds(since: start) < 5)  // not the 15 s request timeout
    }

    @Test("one cancelled caller leaves at once, and leaves the shared flight to the others")
    func cancellingOneCaller() async throws {
        let world = try ClientWorld()
        try world.stop()
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        let leaving = Task { try await client.token() }
        let staying = Task { try await client.token() }
        try await Task.sleep(nanoseconds: 500_000_000)
        let start = ContinuousClock.now
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await leaving.value }
        #expect(seconds(since: start) < 10)  // attestd is still down: the flight goes on for 30 s
        try world.start()
        #expect(try await staying.value.value.hasPrefix("atk_"))
        #expect(try world.requests("attest") == 1)
    }
}

/// Polls `condition` every 50 ms for up to 20 s.
func waitUntil(_ condition: () throws -> Bool) async throws {
    for _ in 0..<400 {
        if try condition() { return }
        try await Task.sleep(nanoseconds: 50_000_000)
    }
    throw TestFailure(description: "the condition did not come true within 20 s")
}

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
        let world = try ClientWorld()
        let silent = try SilentListener()
        let attested = Self.client(port: silent.port, device: try world.device(), keyStore: world.keyStore(), budget: 2, timeout: 1.5)
        let debug = AttestClient(
            configuration: AttestClient.Configuration(
                baseURL: URL(string: "http://127.0.0.1:\(silent.port)") ?? URL(fileURLWithPath: "/"), clientID: world.integration.clientID,
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
        let world = try ClientWorld()
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
                baseURL: URL(string: "http://127.0.0.1:\(forged.port)") ?? URL(fileURLWithPath: "/"), clientID: world.integration.clientID,
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
        let world = try ClientWorld()
        // Followed, the request would wait on the silent listener until its timeout (a transport error).
        let elsewhere = try SilentListener()
        let redirecting = try CannedServer(
            answer: Array(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:\(elsewhere.port)/v1/debug-token\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .utf8))
        let client = AttestClient(
            configuration: AttestClient.Configuration(
                baseURL: URL(string: "http://127.0.0.1:\(redirecting.port)") ?? URL(fileURLWithPath: "/"),
                clientID: world.integration.clientID,
                retryBudget: 0, requestTimeout: 3),
            debugToken: "dbg_" + String(repeating: "A", count: 43))
        await #expect(throws: AttestClientError.rejected(status: 307, code: "", reason: "")) { _ = try await client.token() }
    }

    @Test("a client whose key's turn never comes (another process holds the lock file) ends its call within its deadline")
    func turnWaitEnds() async throws {
        let world = try ClientWorld()
        let store = world.keyStore()
        let lockFile = try #require(store.coordination.lockFile)
        try FileManager.default.createDirectory(at: lockFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        let descriptor = open(lockFile.path, O_RDWR | O_CREAT, 0o600)
        #expect(descriptor >= 0 && flock(descriptor, LOCK_EX) == 0)
        defer { close(descriptor) }
        let client = AttestClient(
            configuration: AttestClient.Configuration(
                baseURL: world.baseURL, clientID: world.integration.clientID, retryBudget: 1, requestTimeout: 1),
            device: try world.device(), keyStore: store)
        let start = ContinuousClock.now
        await #expect {
            _ = try await client.token()
        } throws: { error in
            guard case .transport(let text)? = error as? AttestClientError else { return false }
            return text.contains("did not finish")
        }
        #expect(seconds(since: start) < 1 + 1 + 2)
        #expect(try world.requests("challenge") == 0)
    }

    @Test("no key is attested with under a second of the call left: Apple attests a key once, and it could not be sent")
    func noAttestationWithoutTime() async throws {
        let world = try ClientWorld()
        let client = AttestClient(
            configuration: AttestClient.Configuration(
                baseURL: world.baseURL, clientID: world.integration.clientID, retryBudget: 0, requestTimeout: 0.8),
            device: try world.device(), keyStore: world.keyStore())
        await #expect {
            _ = try await client.token()
        } throws: { error in
            guard case .transport(let text)? = error as? AttestClientError else { return false }
            return text.contains("too little")
        }
        #expect(try world.requests("attest") == 0)
    }
}
