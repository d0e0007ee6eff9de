import AttestCore
import AttestCrypto
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// A purge on SQLite never deletes a token that could still be live when the node's clock
/// stepped ahead: the store has no other clock to check it against.
@Suite("Purge horizon on a clock that steps")
struct PurgeHorizonTests {
    /// A wall clock and a monotonic one, moved apart to make a step.
    final class SteppingClock: WallClock {
        private let wall: Atomic<Int64>
        private let elapsed = Atomic<Int64>(1_000)

        init(_ start: Int64) { wall = Atomic(start) }

        func now() -> Int64 { wall.load(ordering: .relaxed) }
        func monotonicSeconds() -> Double? { Double(elapsed.load(ordering: .relaxed)) }

        /// Time passing: both clocks move.
        func pass(_ seconds: Int64) {
            wall.add(seconds, ordering: .relaxed)
            elapsed.add(seconds, ordering: .relaxed)
        }

        /// A step of the wall clock only (NTP stepping, an operator's `date -s`).
        func step(_ seconds: Int64) { wall.add(seconds, ordering: .relaxed) }
    }

    /// A SQLite service with one device and its live token, issued at `start`.
    struct World {
        let location: TestStoreLocation
        let store: any TokenStore
        let service: TokenService
        let token: TokenRecord

        init(clock: any WallClock, start: Int64) throws {
            location = try TestStoreLocation(.sqlite)
            store = try location.open(at: start)
            let pki = try SyntheticPKI(validAround: start)
            service = TokenService(store: store, verifier: try AttestationVerifier(anchor: pki.anchor), clock: clock)
            let integration = try IntegrationAdmin(store: store, clock: clock).create(
                workspaceID: "ws", name: "App", teamID: "ABCDE12345", bundleIDs: ["com.example.a"], environments: [.production])
            let clientID = try #require(integration.issuedClientID).text
            token = TokenRecord(
                tokenHash: [UInt8](repeating: 1, count: 32), clientID: clientID, workspaceID: "ws",
                keyID: [UInt8](repeating: 2, count: 32), scope: "messages", issuedAt: start, expiresAt: start + 3600)
            let challenge = [UInt8](repeating: 3, count: 32)
            #expect(try store.insertChallenge(id: challenge, clientID: clientID, createdAt: start, expiresAt: start + 300))
            let device = DeviceRecord(
                keyID: token.keyID, clientID: clientID, publicKey: [4] + [UInt8](repeating: 5, count: 64), counter: 0,
                environment: .production, receipt: [], status: .active, createdAt: start, updatedAt: start)
            #expect(try store.registerDevice(device, firstToken: token, consumingChallenge: challenge, at: start) == .registered)
        }

        /// Whether the token's row is still there (looked up at its issue time).
        var tokenKept: Bool { get throws { try store.activeToken(hash: token.tokenHash, at: token.issuedAt) != nil } }
    }

    private static let start: Int64 = 1_800_000_000

    @Test("a clock that steps two hours ahead while running purges no live token; one token lifetime later the purge catches up")
    func stepWhileRunning() throws {
        let clock = SteppingClock(Self.start)
        let world = try World(clock: clock, start: Self.start)
        #expect(try world.service.purgeExpired().verdict?.heldBack == 0)
        clock.pass(60)
        #expect(try world.service.purgeExpired().verdict?.heldBack == 0)
        clock.pass(60)
        clock.step(7200)
        let report = try world.service.purgeExpired()
        #expect(report.verdict?.step == 7200)
        #expect(report.verdict?.heldBack == 7200)
        #expect(try world.tokenKept)
        #expect(world.service.clockSkewSeconds == -7200)
        #expect(world.service.purgeHeldBackSeconds == 7200)
        // Half an hour on: still live by the time the clock should read.
        clock.pass(1800)
        #expect(try world.service.purgeExpired().verdict?.heldBack == 7200)
        #expect(try world.tokenKept)
        // A token lifetime after the step every token issued before it has expired on any clock.
        clock.pass(1800)
        let caughtUp = try world.service.purgeExpired()
        #expect(caughtUp.verdict?.heldBack == 0)
        #expect(caughtUp.removed >= 1)
        #expect(try !world.tokenKept)
        #expect(world.service.clockSkewSeconds == nil)
    }

    @Test("a node started on a clock two hours past its newest token holds the purge back to that token's time")
    func startAheadOfTheDatabase() throws {
        let clock = SteppingClock(Self.start + 7200)
        let world = try World(clock: clock, start: Self.start)
        let report = try world.service.purgeExpired()
        #expect(report.verdict?.first == true)
        #expect(report.verdict?.heldBack == 7200)
        #expect(report.verdict?.time == Self.start)
        #expect(try world.tokenKept)
        clock.pass(3600)
        #expect(try world.service.purgeExpired().removed >= 1)
        #expect(try !world.tokenKept)
    }

    @Test("the same step on a clock that cannot tell steps from time passing deletes the live token (what the horizon prevents)")
    func withoutTheHorizon() throws {
        let clock = SettableWallClock(Self.start)
        let world = try World(clock: clock, start: Self.start)
        clock.advance(7200)
        #expect(try world.service.purgeExpired().verdict == nil)
        #expect(try !world.tokenKept)
    }

    @Test("a clock before the newest token is seen and exported; nothing is held back for it")
    func clockBehind() throws {
        let clock = SteppingClock(Self.start - 600)
        let world = try World(clock: clock, start: Self.start)
        let report = try world.service.purgeExpired()
        #expect(report.verdict?.behind == 600)
        #expect(report.verdict?.heldBack == 0)
        #expect(world.service.clockSkewSeconds == 600)
        #expect(try world.tokenKept)
    }

    @Test("jitter within the tolerance holds nothing back")
    func jitter() throws {
        var horizon = PurgeHorizon(hold: 3600, tolerance: 5)
        #expect(horizon.verdict(wall: 100, monotonic: 10, newestIssue: 97).heldBack == 0)
        let next = horizon.verdict(wall: 164, monotonic: 70, newestIssue: 160)
        #expect(next.step == nil)
        #expect(next.time == 164)
    }

    @Test("a second step during a hold keeps the first hold's horizon")
    func stepDuringHold() throws {
        var horizon = PurgeHorizon(hold: 3600, tolerance: 5)
        _ = horizon.verdict(wall: 1000, monotonic: 0, newestIssue: 1000)
        #expect(horizon.verdict(wall: 2060, monotonic: 60, newestIssue: 1000).time == 1060)
        let second = horizon.verdict(wall: 5120, monotonic: 120, newestIssue: 1000)
        #expect(second.step == 3000)
        #expect(second.time == 1120)
        // The hold restarts at the second step: one lifetime from it.
        #expect(horizon.verdict(wall: 5120 + 3599, monotonic: 120 + 3599, newestIssue: 1000).time == 1120 + 3599)
        #expect(horizon.verdict(wall: 5120 + 3600, monotonic: 120 + 3600, newestIssue: 1000).heldBack == 0)
    }
}
