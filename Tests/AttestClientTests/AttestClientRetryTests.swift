import AttestService
import AttestStorage
import AttestTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AttestClient

/// Retries, budgets and cancellation, on the world's manual clock: attestd in process follows
/// the same clock, so a pause for `Retry-After` moves both on at once and no real time passes.
@Suite("AttestClient retries within its budget and stops when cancelled")
struct AttestClientRetryTests {
    @Test("attestd down and back within the retry budget: the first call waits for it and succeeds", arguments: StoreBackend.available)
    func downAndBack(backend: StoreBackend) async throws {
        let world = try ClientWorld(backend)
        try world.stop()
        world.comesBack(after: 1.5)
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        let start = world.uptime.now()
        let token = try await client.token()
        #expect(token.value.hasPrefix("atk_"))
        #expect(world.uptime.now() - start >= 1.5)
        #expect(world.uptime.now() - start < 30)  // within the budget
        #expect(world.uptime.pauses.count >= 2)  // backed off, more than once
        #expect(try world.requests("attest", status: 200) == 1)
    }

    @Test("attestd down past the budget: transport is thrown when the budget is spent, after backing off within it")
    func budgetSpent() async throws {
        let world = try ClientWorld()
        try world.stop()
        let client = world.client(device: try world.device(), keyStore: world.keyStore(), retryBudget: 2)
        let start = world.uptime.now()
        await #expect {
            try await client.token()
        } throws: { error in
            guard case .transport = error as? AttestClientError else { return false }
            return true
        }
        let elapsed = world.uptime.now() - start
        #expect(elapsed > 0.5 && elapsed <= 2, "\(elapsed) s")  // it did retry, and not past the budget
        let pauses = world.uptime.pauses
        #expect(pauses.count >= 2 && zip(pauses, pauses.dropFirst()).allSatisfy { $0.0 <= 1 || $0.1 > $0.0 / 2 })
        #expect(try world.deviceKeys() == 0)
    }

    @Test("renewal during an outage: the token in hand is returned at once while it is valid; after expiry the outage is thrown")
    func renewalDuringOutage() async throws {
        let world = try ClientWorld()
        let client = world.client(device: try world.device(), keyStore: world.keyStore(), retryBudget: 10)
        let first = try await client.token()
        try world.stop()

        world.clock.advance(3600 - 100)  // within the margin, still valid
        let pausesBefore = world.uptime.pauses.count
        #expect(try await client.token() == first)
        #expect(world.uptime.pauses.count == pausesBefore)  // not the 10 s budget: one try, then the token in hand
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
        // A challenge of our own empties the bucket just before each call that must meet it full.
        let payload = #"{"client_id":"\#(world.integration.clientID)"}"#
        _ = world.respond("POST", "/v1/challenge", json: payload)
        var refused = try world.requests("challenge", status: 429)
        let pausesBefore = world.uptime.pauses.count
        _ = try await client.token(forcingRefresh: true)  // its challenge is over the rate at first
        #expect(world.uptime.pauses.dropFirst(pausesBefore).first.map { $0 >= 1 } == true)  // the Retry-After
        #expect(try world.requests("challenge", status: 429) > refused)
        #expect(try world.requests("token", status: 200) == 1)

        let impatient = world.client(device: try world.device(), keyStore: world.keyStore(), retryBudget: 0.5)
        _ = world.respond("POST", "/v1/challenge", json: payload)
        refused = try world.requests("challenge", status: 429)
        await #expect {
            try await impatient.token()
        } throws: { error in
            guard case .rateLimited(let retryAfter?) = error as? AttestClientError else { return false }
            return retryAfter >= 1
        }
        #expect(try world.requests("challenge", status: 429) > refused)
    }

    @Test("503 storage_unavailable honours Retry-After: the call pauses as long as it says, then succeeds")
    func storageUnavailable() async throws {
        let world = try ClientWorld()
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        // What a node whose database is locked answers (attestd's own 503 on a locked SQLite file is
        // AttestHTTPTests' and AttestStorageTests'); here the client's part: honour it, then go on.
        world.transportRefuses("/v1/challenge", status: 503, code: "storage_unavailable", retryAfter: 3)
        _ = try await client.token()
        #expect(world.refusals("/v1/challenge") == 1)
        #expect(world.uptime.pauses.first == 3)  // the Retry-After, not a backoff of its own
        #expect(try world.requests("challenge", status: 200) == 1)
        #expect(try world.requests("attest", status: 200) == 1)
    }

    @Test("cancelling the calling task stops a pause for Retry-After at once, and nothing is sent after")
    func cancellationStopsRetries() async throws {
        // One challenge per 4 s: the client's second challenge gets 429 with Retry-After 4.
        let world = try ClientWorld(autoAdvance: false) { $0.challengePerIntegration = RateLimit(perSecond: 0.25, burst: 1) }
        #expect(world.respond("POST", "/v1/challenge", json: #"{"client_id":"\#(world.integration.clientID)"}"#).status == 200)
        let device = HookedDevice(try world.device()) { _, _ in }
        let client = world.client(device: device, keyStore: world.keyStore())
        let call = Task { try await client.token() }
        await world.uptime.untilWaiting(1)  // pausing for the Retry-After
        #expect(try world.requests("challenge", status: 429) == 1)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }

        world.uptime.advance(5)  // past the Retry-After
        #expect(try world.requests("challenge") == 2)  // no retry went on in the background
        #expect(device.calls.count("generateKey") == 0)
        // The next call starts afresh.
        _ = try await client.token()
        #expect(try world.requests("attest", status: 200) == 1)
    }

    @Test("cancelling the calling task cancels its request at once (attestd accepted the connection and never answers)")
    func cancellationStopsARequest() async throws {
        let world = try ClientWorld()
        try world.stop()
        world.silent.store(true, ordering: .relaxed)
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        let call = Task { try await client.token() }
        await world.silence.untilWaiting(1)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
    }

    @Test("one cancelled caller leaves at once, and leaves the shared flight to the others")
    func cancellingOneCaller() async throws {
        let world = try ClientWorld(autoAdvance: false)
        try world.stop()
        let client = world.client(device: try world.device(), keyStore: world.keyStore())
        let leaving = Task { try await client.token() }
        let staying = Task { try await client.token() }
        await world.uptime.untilWaiting(1)  // the flight pauses: attestd is down
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await leaving.value }
        #expect(world.uptime.waiting == 1)  // the flight goes on for the other caller
        try world.start()
        world.uptime.advance(10)
        #expect(try await staying.value.value.hasPrefix("atk_"))
        #expect(try world.requests("attest") == 1)
    }
}
