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

// Serialized: these tests measure pauses, which a machine busy with other tests would stretch.
@Suite("AttestClient retries within its budget and stops when cancelled", .serialized)
struct AttestClientRetryTests {
    @Test("attestd down and back within the retry budget: the first call waits for it and succeeds", arguments: StoreBackend.available)
    func downAndBack(backend: StoreBackend) async throws {
        let world = try ClientWorld(backend)
        try world.stop()
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        let start = ContinuousClock.now
        let restart = Task {
            try await Task.sleep(nanoseconds: 1_500_000_000)
            try world.start()
        }
        let token = try await client.token()
        try await restart.value
        #expect(token.value.hasPrefix("atk_"))
        #expect(seconds(since: start) >= 1.5)
        #expect(seconds(since: start) < 15)
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
        #expect(seconds(since: start) < 3)
        #expect(seconds(since: start) > 0.5)  // it did retry
        #expect(try world.deviceKeys() == 0)
    }

    @Test("renewal during an outage: the token in hand is returned at once while it is valid; after expiry the outage is thrown")
    func renewalDuringOutage() async throws {
        let world = try ClientWorld()
        let client = world.client(device: try world.device(), keyStore: world.keyStore(), retryBudget: 1)
        let first = try await client.token()
        try world.stop()

        world.clock.advance(3600 - 100)  // within the margin, still valid
        let start = ContinuousClock.now
        #expect(try await client.token() == first)
        #expect(seconds(since: start) < 0.5)

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
        let start = ContinuousClock.now
        _ = try await client.token(forcingRefresh: true)  // its challenge is over the rate at first
        #expect(seconds(since: start) >= 1)
        #expect(try world.requests("challenge", status: 429) >= 1)
        #expect(try world.requests("token", status: 200) == 1)

        let impatient = world.client(device: try world.device(), keyStore: world.keyStore(), retryBudget: 0.5)
        await #expect {
            try await impatient.token()
        } throws: { error in
            guard case .rateLimited(let retryAfter?) = error as? AttestClientError else { return false }
            return retryAfter >= 1
        }
    }

    @Test("503 storage_unavailable honours Retry-After: the call succeeds once attestd's database is free again")
    func storageUnavailable() async throws {
        let world = try ClientWorld { $0.busyTimeoutMilliseconds = 100 }
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        let locked = DispatchSemaphore(value: 0)
        let path = world.sqliteFile.path
        // Another writer holds SQLite's write lock for 1.5 s (attestctl mid-transaction, or a backup).
        let holder = Thread {
            guard let database = try? SQLiteDatabase(path: path, create: false) else {
                locked.signal()
                return
            }
            _ = try? database.immediateTransaction {
                locked.signal()
                Thread.sleep(forTimeInterval: 1.5)
            }
        }
        holder.start()
        locked.wait()
        _ = try await client.token()
        #expect(try world.requests("challenge", status: 503) >= 1)
        #expect(try world.requests("attest", status: 200) == 1)
    }

    @Test("cancelling the calling task stops the retries at once, and nothing is sent after")
    func cancellationStopsRetries() async throws {
        let world = try ClientWorld()
        try world.stop()
        let device = HookedDevice(try world.device()) { _, _ in }
        let client = world.client(device: device, keyStore: world.keyStore())
        let call = Task { try await client.token() }
        try await Task.sleep(nanoseconds: 800_000_000)
        let start = ContinuousClock.now
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(seconds(since: start) < 0.5)

        try world.start()
        try await Task.sleep(nanoseconds: 1_500_000_000)
        #expect(try world.allRequests() == 0)  // no retry went on in the background
        #expect(device.calls.count("generateKey") == 0)
        // The next call starts afresh.
        _ = try await client.token()
        #expect(try world.requests("attest", status: 200) == 1)
    }

    @Test("one cancelled caller leaves the shared flight to the others")
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
        #expect(seconds(since: start) < 0.5)
        try world.start()
        #expect(try await staying.value.value.hasPrefix("atk_"))
        #expect(try world.requests("attest") == 1)
    }
}
