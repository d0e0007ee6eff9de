import AttestCore
import AttestCrypto
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

/// A node whose clock strays from the shared database's refuses to serve and to purge, instead
/// of deciding the expiry of every node's rows by a wrong clock (decision 0014).
@Suite("Clock against the database")
struct ClockSkewTests {
    /// A service on its own database of `backend`, its clock at the real time now.
    struct World {
        let location: TestStoreLocation
        let store: any TokenStore
        let clock: SettableWallClock
        let service: TokenService
        let clientID: ClientID

        init(_ backend: StoreBackend) throws {
            let now = Int64(Date().timeIntervalSince1970)
            location = try TestStoreLocation(backend)
            store = try location.open(at: now)
            clock = SettableWallClock(now)
            let pki = try SyntheticPKI(validAround: now)
            service = TokenService(store: store, verifier: try AttestationVerifier(anchor: pki.anchor), clock: clock)
            let integration = try IntegrationAdmin(store: store, clock: clock).create(
                workspaceID: "ws", name: "App", teamID: "ABCDE12345", bundleIDs: ["com.example.a"], environments: [.production])
            clientID = try #require(integration.issuedClientID)
        }
    }

    @Test(
        "a node 2 hours fast refuses challenges, gateway checks, readiness and the purge, and serves again once its clock agrees",
        .enabled(if: StoreBackend.available.contains(.postgresql)))
    func skewedNodeRefuses() throws {
        let world = try World(.postgresql)
        // The real time again: the world's set-up (a database created on a busy server) may
        // have taken seconds, and the tolerance is 5 s.
        let now = Self.realNow()
        world.clock.set(now)
        #expect(abs(try #require(try world.service.measureClockSkew())) < 5)
        _ = try world.service.issueChallenge(clientID: world.clientID, from: "127.0.0.1")
        // A live token of another node, valid for an hour by the database's clock.
        let token = TokenRecord(
            tokenHash: [UInt8](repeating: 1, count: 32), clientID: world.clientID.text, workspaceID: "ws",
            keyID: [UInt8](repeating: 2, count: 32), scope: "messages", issuedAt: now, expiresAt: now + 3600)
        #expect(
            try world.store.insertChallenge(
                id: [UInt8](repeating: 3, count: 32), clientID: world.clientID.text, createdAt: now, expiresAt: now + 300))
        let device = DeviceRecord(
            keyID: token.keyID, clientID: world.clientID.text, publicKey: [4] + [UInt8](repeating: 5, count: 64), counter: 0,
            environment: .production, receipt: [], status: .active, createdAt: now, updatedAt: now)
        #expect(
            try world.store.registerDevice(device, firstToken: token, consumingChallenge: [UInt8](repeating: 3, count: 32), at: now)
                == .registered)

        world.clock.set(now + 7200)
        let skew = try #require(try world.service.measureClockSkew())
        #expect(skew < -7000)
        let refused = ServiceError(.storageUnavailable, .clockSkew, "")
        #expect(serviceError { try world.service.issueChallenge(clientID: world.clientID, from: "127.0.0.1") } == refused)
        #expect(serviceError { try world.service.purgeExpired() } == refused)
        #expect(serviceError { try world.service.checkStorage() } == refused)
        #expect(serviceError { try world.service.introspect("atk_whatever") } == refused)
        // The purge did nothing: the other node's token is still there, live by the database's clock.
        #expect(try world.store.activeToken(hash: token.tokenHash, at: now) != nil)

        world.clock.set(Self.realNow() + 1)
        _ = try world.service.measureClockSkew()
        _ = try world.service.issueChallenge(clientID: world.clientID, from: "127.0.0.1")
        try world.service.checkStorage()
        withExtendedLifetime(world.location) {}
    }

    private static func realNow() -> Int64 { Int64(Date().timeIntervalSince1970) }

    @Test("SQLite has one clock, the node's: nothing to measure, nothing refused")
    func sqliteHasOneClock() throws {
        let world = try World(.sqlite)
        world.clock.set(world.clock.now() + 7200)
        #expect(try world.service.measureClockSkew() == nil)
        _ = try world.service.issueChallenge(clientID: world.clientID, from: "127.0.0.1")
        withExtendedLifetime(world.location) {}
    }
}
