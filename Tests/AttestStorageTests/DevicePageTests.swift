import AttestTesting
import Testing

@testable import AttestStorage

/// The device listing of the admin API and attestctl: bounded pages, newest first, filters,
/// and a cursor that neither repeats nor skips a row whatever is added meanwhile.
@Suite("Device pages")
struct DevicePageTests {
    typealias World = TokenStoreContractTests.World
    static let time = TokenStoreContractTests.time

    /// Every page of `query`, in order.
    static func pages(_ world: World, _ query: DeviceQuery) throws -> [DevicePage] {
        var query = query
        var pages: [DevicePage] = []
        while true {
            let page = try world.store.devicePage(clientID: world.integration.clientID, query: query, at: time)
            pages.append(page)
            guard let next = page.next, pages.count < 100 else { return pages }
            query.after = next
        }
    }

    @Test("pages of at most `limit` rows, newest first, that together list every device once", arguments: StoreBackend.available)
    func pagesListEveryDeviceOnce(_ backend: StoreBackend) throws {
        let world = try World(backend)
        for seed in UInt8(1)...25 { try world.register(seed) }
        let pages = try Self.pages(world, DeviceQuery(limit: 10))
        #expect(pages.map(\.devices.count) == [10, 10, 5])
        #expect(pages.flatMap(\.devices).map { $0.keyID[0] } == Array((UInt8(1)...25).reversed()))
        #expect(pages.last?.next == nil)
        // Each listed device has its one live token, and no receipt is read.
        #expect(pages.flatMap(\.devices).allSatisfy { $0.liveTokens == 1 && $0.status == .active })
    }

    @Test("a device added between two pages does not shift the second", arguments: StoreBackend.available)
    func addedMeanwhile(_ backend: StoreBackend) throws {
        let world = try World(backend)
        for seed in UInt8(1)...6 { try world.register(seed) }
        let first = try world.store.devicePage(clientID: world.integration.clientID, query: DeviceQuery(limit: 3), at: Self.time)
        try world.register(7)
        let second = try world.store.devicePage(
            clientID: world.integration.clientID, query: DeviceQuery(limit: 3, after: first.next), at: Self.time)
        #expect(first.devices.map { $0.keyID[0] } == [6, 5, 4])
        #expect(second.devices.map { $0.keyID[0] } == [3, 2, 1])
    }

    @Test("filters: status, and a key ID prefix of whole bytes or an odd number of hex digits", arguments: StoreBackend.available)
    func filters(_ backend: StoreBackend) throws {
        let world = try World(backend)
        for seed in UInt8(1)...25 { try world.register(seed) }
        for seed in [UInt8(3), 17] { #expect(try world.store.blockDevice(keyID: world.device(seed).keyID, at: Self.time, audit: nil) == 1) }
        func keys(_ query: DeviceQuery) throws -> [UInt8] { try Self.pages(world, query).flatMap(\.devices).map { $0.keyID[0] } }
        #expect(try keys(DeviceQuery(limit: 2, status: .revoked)) == [17, 3])
        #expect(try keys(DeviceQuery(status: .active)).count == 23)
        // 0x0a0a...: the device of seed 10, by its first byte or all 32.
        #expect(try keys(DeviceQuery(keyIDPrefix: [0x0A])) == [10])
        #expect(try keys(DeviceQuery(keyIDPrefix: [UInt8](repeating: 0x0A, count: 32))) == [10])
        // The half byte 1: seeds 0x10 to 0x1F, of which 16 to 25 exist.
        #expect(try keys(DeviceQuery(limit: 4, keyIDPrefix: [], nibble: 1)) == Array((UInt8(16)...25).reversed()))
        #expect(try keys(DeviceQuery(status: .revoked, keyIDPrefix: [], nibble: 1)) == [17])
        #expect(try keys(DeviceQuery(keyIDPrefix: [0x0A, 0x0B])).isEmpty)
    }

    @Test("PostgreSQL: devices from before the order of issue (seq NULL) come last, and their pages continue by time and key")
    func rowsWithoutOrder() throws {
        guard StoreBackend.available.contains(.postgresql) else { return }
        let world = try World(.postgresql)
        for seed in UInt8(1)...8 { try world.register(seed) }
        guard case .postgresql(let settings) = world.location.location else { return }
        // Devices 1 to 5 as migration 0012 left the rows before it.
        try PostgresConnection(settings).query("UPDATE devices SET seq = NULL WHERE substring(key_id from 1 for 1) <= '\\x05'::bytea")
        let listed = try Self.pages(world, DeviceQuery(limit: 3)).flatMap(\.devices).map { $0.keyID[0] }
        // 8, 7, 6 by seq; then 5 to 1, all created in the same second, by key, newest first.
        #expect(listed == [8, 7, 6, 5, 4, 3, 2, 1])
    }

    @Test("a limit outside 1 to 500 is clamped: a page is never the whole table")
    func limitClamped() {
        #expect(DeviceQuery(limit: 0).limit == 1)
        #expect(DeviceQuery(limit: 100_000).limit == DeviceQuery.maximumLimit)
    }
}

/// The device listing by last activity (`DeviceQuery.Sort.lastSeen`): most recent first, ties by
/// key ID, pages that follow one another by their cursor.
@Suite("Device pages by last activity")
struct DeviceLastSeenPageTests {
    typealias World = TokenStoreContractTests.World
    static let time = TokenStoreContractTests.time

    @Test("the devices active last come first; ties by key ID, newest key ID first; every device once", arguments: StoreBackend.available)
    func byLastActivity(_ backend: StoreBackend) throws {
        let world = try World(backend)
        for seed in UInt8(1)...6 { try world.register(seed) }
        #expect(try world.store.blockDevice(keyID: world.device(2).keyID, at: Self.time + 10, audit: nil) == 1)
        #expect(try world.store.blockDevice(keyID: world.device(4).keyID, at: Self.time + 20, audit: nil) == 1)
        var query = DeviceQuery(limit: 2)
        query.sort = .lastSeen
        let pages = try DevicePageTests.pages(world, query)
        #expect(pages.map { $0.devices.map { $0.keyID[0] } } == [[4, 2], [6, 5], [3, 1]])
        #expect(pages[0].next?.lastSeen == Self.time + 10)
    }
}
