import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// The contract of `store copy` (what one store hands another) and of the shared rate limits.
extension TokenStoreContractTests {
    // MARK: Copying between stores

    @Test(
        "a snapshot restored into an empty store of any backend reproduces it: revoked integrations, counters, live tokens",
        arguments: StoreBackend.available.flatMap { from in StoreBackend.available.map { (from, $0) } })
    func copy(_ from: StoreBackend, _ to: StoreBackend) throws {
        let world = try World(from)
        try world.register(1)
        try world.register(2)
        _ = try world.store.advanceCounter(
            keyID: world.device(1).keyID, from: 0, to: 7, at: Self.time, token: world.token(3, keySeed: 1),
            consumingChallenge: try world.challenge(3), keepingLatest: nil)
        try world.store.insertIntegration(World.integration("clid_gone"), audit: nil)
        _ = try world.store.revokeIntegration(clientID: "clid_gone", at: Self.time + 1, audit: nil)
        let snapshot = try world.store.snapshot(at: Self.time)
        #expect(snapshot.integrations.map(\.clientID) == ["clid_contract", "clid_gone"])
        #expect(snapshot.devices.count == 2)
        #expect(snapshot.tokens.count == 3)

        let targetLocation = try TestStoreLocation(to)
        defer { withExtendedLifetime(targetLocation) {} }
        let target = try targetLocation.open(at: Self.time)
        try target.restore(snapshot)
        #expect(try target.snapshot(at: Self.time) == snapshot)
        #expect(try target.integration(clientID: "clid_gone")?.status == .revoked)
        #expect(try target.device(keyID: world.device(1).keyID)?.counter == 7)
        #expect(try target.activeToken(hash: world.token(3, keySeed: 1).tokenHash, at: Self.time) != nil)
        // Expired tokens are left behind.
        #expect(try world.store.snapshot(at: Self.time + 3600).tokens.isEmpty)
    }

    @Test("restoring into a store that holds an integration is refused and writes nothing", arguments: StoreBackend.available)
    func restoreRefusesNonEmpty(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let before = try world.store.snapshot(at: Self.time)
        let other = StoreSnapshot(integrations: [World.integration("clid_other")], devices: [], tokens: [])
        #expect(throws: StorageError(.notEmpty, "")) { try world.store.restore(other) }
        #expect(try world.store.snapshot(at: Self.time) == before)
    }

    // MARK: Shared rate limits

    @Test("a shared bucket holds across nodes: burst, then a wait, then refills at its rate", arguments: StoreBackend.available)
    func sharedBucket(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let other = try world.otherNode()
        let now = Double(Self.time)
        #expect(try world.store.takeSharedToken(bucket: "b", perSecond: 1, burst: 2, at: now) == nil)
        #expect(try other.takeSharedToken(bucket: "b", perSecond: 1, burst: 2, at: now) == nil)
        #expect(try world.store.takeSharedToken(bucket: "b", perSecond: 1, burst: 2, at: now) == 1)
        #expect(try other.takeSharedToken(bucket: "b", perSecond: 1, burst: 2, at: now) == 1)
        #expect(try other.takeSharedToken(bucket: "c", perSecond: 1, burst: 2, at: now) == nil)
        #expect(try world.store.takeSharedToken(bucket: "b", perSecond: 1, burst: 2, at: now + 1) == nil)
    }

    @Test("racing nodes cannot take more from a shared bucket than its burst", arguments: StoreBackend.available)
    func sharedBucketRace(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let nodes = [world.store, try world.otherNode(), try world.otherNode()]
        let taken = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 30) { index in
            if (try? nodes[index % 3].takeSharedToken(bucket: "race", perSecond: 0.001, burst: 10, at: Double(Self.time))) == .some(nil) {
                taken.withLock { $0 += 1 }
            }
        }
        #expect(taken.withLock { $0 } == 10)
    }
}
