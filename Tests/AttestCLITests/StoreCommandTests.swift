import AttestCLI
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

@Suite("attestctl store copy")
struct StoreCommandTests {
    /// A SQLite database as attestd leaves it: one active and one revoked integration, devices, tokens.
    static func populatedSQLite() throws -> (location: TestStoreLocation, store: any TokenStore) {
        let location = try TestStoreLocation(.sqlite)
        let store = try location.open(at: 0)
        let admin = IntegrationAdmin(store: store, clock: SettableWallClock(1_800_000_000))
        let kept = try admin.create(
            workspaceID: "ws", name: "kept", teamID: "ABCDE12345", bundleIDs: ["com.example.a"], environments: [.production])
        let gone = try admin.create(
            workspaceID: "ws", name: "gone", teamID: "ABCDE12345", bundleIDs: ["com.example.b"], environments: [.production])
        _ = try admin.revoke(clientID: gone.clientID)
        for seed in UInt8(1)...3 {
            let id = [UInt8](repeating: seed, count: 32)
            #expect(try store.insertChallenge(id: id, clientID: kept.clientID, createdAt: 1_800_000_000, expiresAt: 1_800_000_300))
            let device = DeviceRecord(
                keyID: [UInt8](repeating: seed, count: 32), clientID: kept.clientID, publicKey: [4] + [UInt8](repeating: seed, count: 64),
                counter: UInt32(seed), environment: .production, receipt: [], status: .active, createdAt: 1_800_000_000,
                updatedAt: 1_800_000_000)
            let token = TokenRecord(
                tokenHash: [UInt8](repeating: seed, count: 32), clientID: kept.clientID, workspaceID: "ws", keyID: device.keyID,
                scope: "messages", issuedAt: 1_800_000_000, expiresAt: 1_800_000_000 + (seed == 3 ? 10 : 3600))
            _ = try store.registerDevice(device, firstToken: token, consumingChallenge: id, at: 1_800_000_000)
        }
        return (location, store)
    }

    @Test(
        "copies integrations (revoked too), devices with counters and unexpired tokens into an empty database and reports the counts",
        arguments: StoreBackend.available)
    func copy(_ backend: StoreBackend) throws {
        let (source, store) = try Self.populatedSQLite()
        let target = try TestStoreLocation(backend == .sqlite ? .sqlite : .postgresql)
        let console = Console(now: 1_800_000_100)
        #expect(console.run(["store", "copy", "--from", source.argument, "--to", target.argument, "--json"]) == 0)
        #expect(console.json["integrations"] as? Int == 2)
        #expect(console.json["revoked_integrations"] as? Int == 1)
        #expect(console.json["devices"] as? Int == 3)
        #expect(console.json["tokens"] as? Int == 2)  // the third expired at +10 s
        let copied = try TokenStores.openExisting(target.location, busyTimeout: .milliseconds(1000))
        #expect(try copied.snapshot(at: 1_800_000_100) == store.snapshot(at: 1_800_000_100))
        if let password = target.password { #expect(!console.out.withLock { $0.contains(password) }) }

        let again = Console(now: 1_800_000_100)
        #expect(again.run(["store", "copy", "--from", source.argument, "--to", target.argument]) == 1)
        #expect(again.err.withLock { $0.contains("holds 2 integrations already") })
        #expect(try copied.snapshot(at: 1_800_000_100).integrations.count == 2)
    }

    @Test("refuses a missing source and the same database on both sides")
    func refusals() throws {
        let target = try TestStoreLocation(.sqlite)
        let missing = Console()
        #expect(missing.run(["store", "copy", "--from", "/nonexistent/attestd.sqlite", "--to", target.argument]) == 1)
        #expect(missing.err.withLock { $0.contains("attestd creates it") })
        #expect(Console().run(["store", "copy", "--from", target.argument, "--to", target.argument]) == 64)
    }
}
