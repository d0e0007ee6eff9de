import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// The order of issue (migration 0012): "newest" never depends on a whole-second time broken by a
/// random hash. Every token here is minted in the same second, and each newer token's hash sorts
/// below every older one's, so a tie broken by the hash keeps the oldest tokens.
@Suite("Order of issue")
struct IssueOrderTests {
    typealias World = TokenStoreContractTests.World
    static let time = TokenStoreContractTests.time

    /// Token `step` of device 1: hashes fall as steps rise (0xF0 for the attested token).
    static func tokenSeed(_ step: Int) -> UInt8 { UInt8(0xF0 - 0x10 * step) }

    @Test(
        "attest and five refreshes in one second keep exactly the newest N under caps 1, 2 and 3", arguments: StoreBackend.available,
        [1, 2, 3])
    func capKeepsNewest(_ backend: StoreBackend, cap: Int) throws {
        let world = try World(backend)
        let keyID = world.device(1).keyID
        #expect(
            try world.store.registerDevice(
                world.device(1), firstToken: world.token(Self.tokenSeed(0), keySeed: 1), consumingChallenge: try world.challenge(1),
                at: Self.time) == .registered)
        for step in 1...5 {
            let outcome = try world.store.advanceCounter(
                keyID: keyID, from: UInt32(step - 1), to: UInt32(step), at: Self.time, token: world.token(Self.tokenSeed(step), keySeed: 1),
                consumingChallenge: try world.challenge(UInt8(10 + step)), keepingLatest: cap)
            #expect(outcome == .advanced)
            let live = try (0...step).filter {
                try world.store.activeToken(hash: world.token(Self.tokenSeed($0), keySeed: 1).tokenHash, at: Self.time) != nil
            }
            #expect(live == Array(max(0, step - cap + 1)...step), "after refresh \(step) under a cap of \(cap)")
        }
    }

    @Test(
        "two nodes refreshing one device at once under a cap of 1 leave exactly one token: the last minted",
        arguments: StoreBackend.available)
    func racingRefreshesKeepTheLast(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        let keyID = world.device(1).keyID
        let nodes = [try world.otherNode(), try world.otherNode()]
        // Each minted token's seed, by the counter it advanced to: the highest counter is the last commit.
        let minted = Mutex<[UInt32: UInt8]>([:])
        let challenges = try (0..<40).map { try world.challenge(UInt8(100 + $0)) }
        DispatchQueue.concurrentPerform(iterations: 2) { node in
            for round in 0..<20 {
                let index = node * 20 + round
                guard let counter = try? nodes[node].device(keyID: keyID)?.counter else { continue }
                let seed = UInt8(0xE0 - index)
                let outcome = try? nodes[node].advanceCounter(
                    keyID: keyID, from: counter, to: counter + 1, at: Self.time, token: world.token(seed, keySeed: 1),
                    consumingChallenge: challenges[index], keepingLatest: 1)
                if outcome == .advanced { minted.withLock { $0[counter + 1] = seed } }
            }
        }
        let tokens = minted.withLock { $0 }
        #expect(tokens.count >= 2, "the race advanced the counter \(tokens.count) times")
        let last = try #require(tokens.max { $0.key < $1.key })
        #expect(try world.store.liveTokenCount(keyID: keyID, at: Self.time) == 1)
        #expect(try world.store.activeToken(hash: world.token(last.value, keySeed: 1).tokenHash, at: Self.time) != nil)
    }

    @Test("listings follow the order of issue, not the key, within one second", arguments: StoreBackend.available)
    func listingsInIssueOrder(_ backend: StoreBackend) throws {
        let world = try World(backend)
        // Registered with key IDs falling: listed newest first by key, the oldest device would come first.
        for seed in [UInt8(0x90), 0x50, 0x10] { try world.register(seed) }
        let devices = try world.store.devicePage(clientID: world.integration.clientID, query: DeviceQuery(), at: Self.time).devices
        #expect(devices.map { $0.keyID[0] } == [0x10, 0x50, 0x90])
        for clientID in ["clid_zz", "clid_mm", "clid_aa"] {
            try world.store.insertIntegration(World.integration(clientID), audit: nil)
        }
        #expect(try world.store.integrations().map(\.clientID) == ["clid_contract", "clid_zz", "clid_mm", "clid_aa"])
    }

    @Test("the migration keeps the order the existing tokens had, then numbers new ones after them")
    func sqliteMigrationKeepsOrder() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        let database = try SQLiteDatabase(path: path)
        try Migrator(migrations: EmbeddedMigrations.sqlite.filter { $0.id < 12 }).migrate(database, at: Self.time)
        try database.immediateTransaction {
            try database.execute(
                "INSERT INTO integrations (client_id, workspace_id, name, team_id, allowed_environments, status, created_at) "
                    + "VALUES ('clid_m', 'ws', 'M', 'ABCDE12345', 'production', 'active', \(Self.time))")
            // Inserted out of order: the later issued_at first, and ties with hashes the other way round.
            for (hash, issued) in [(0x01, Self.time + 1), (0x09, Self.time), (0x05, Self.time)] {
                try database.execute(
                    "INSERT INTO tokens (token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at) "
                        + "VALUES (?, 'clid_m', 'ws', ?, 'messages', ?, ?)",
                    arguments: [
                        .blob([UInt8](repeating: UInt8(hash), count: 32)), .blob([UInt8](repeating: 7, count: 32)),
                        .integer(issued), .integer(issued + 3600),
                    ])
            }
        }
        try Migrator().migrate(database, at: Self.time)
        try database.immediateTransaction {
            try database.execute(
                "INSERT INTO tokens (token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at) "
                    + "VALUES (zeroblob(32), 'clid_m', 'ws', zeroblob(32), 'messages', \(Self.time), \(Self.time + 3600))")
        }
        let order = try database.prepare("SELECT hex(substr(token_hash, 1, 1)) FROM tokens ORDER BY seq")
        var hashes: [String] = []
        while try order.step() { hashes.append(order.string(at: 0) ?? "") }
        #expect(hashes == ["05", "09", "01", "00"])
    }

    @Test(
        "on PostgreSQL the migration rewrites no row: tokens from before keep their old order, ahead of every later one",
        .enabled(if: StoreBackend.available.contains(.postgresql)))
    func postgresMigrationKeepsOrder() throws {
        let location = try TestStoreLocation(.postgresql)
        guard case .postgresql(let settings) = location.location else { return }
        let connection = try PostgresConnection(settings)
        try PostgresMigrator(migrations: EmbeddedMigrations.postgresql.filter { $0.id < 12 }).migrate(connection, at: Self.time)
        try connection.execute(
            """
            INSERT INTO integrations (client_id, workspace_id, name, team_id, allowed_environments, status, created_at)
                VALUES ('clid_m', 'ws', 'M', 'ABCDE12345', 'production', 'active', \(Self.time));
            INSERT INTO tokens (token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at) VALUES
                (decode(repeat('01', 32), 'hex'), 'clid_m', 'ws', decode(repeat('07', 32), 'hex'), 'messages', \(Self.time + 1), \(Self.time + 3601)),
                (decode(repeat('09', 32), 'hex'), 'clid_m', 'ws', decode(repeat('07', 32), 'hex'), 'messages', \(Self.time), \(Self.time + 3600)),
                (decode(repeat('05', 32), 'hex'), 'clid_m', 'ws', decode(repeat('07', 32), 'hex'), 'messages', \(Self.time), \(Self.time + 3600));
            """)
        try PostgresMigrator().migrate(connection, at: Self.time)
        try connection.execute(
            """
            INSERT INTO tokens (token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at)
                VALUES (decode(repeat('00', 32), 'hex'), 'clid_m', 'ws', decode(repeat('07', 32), 'hex'), 'messages', \(Self.time), \(Self.time + 3600))
            """)
        // The rows from before keep seq NULL (nothing rewritten); the copy's order puts them first.
        #expect(try connection.query("SELECT count(*) FROM tokens WHERE seq IS NULL").int64(0, 0) == 3)
        let copied = try location.open(at: Self.time).snapshot(at: Self.time).tokens
        #expect(copied.map { $0.tokenHash[0] } == [0x05, 0x09, 0x01, 0x00])
    }
}
