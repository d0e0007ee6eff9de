import AttestServer
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

/// A stopped attestd lets go of everything: its listeners, its service and its store, and with
/// the store the database's open files (before this, `/metrics`'s gauges held the listener in a
/// cycle, and every stopped server kept its database open: the test process reached 2,400 open
/// descriptors, and Foundation's `Process.run` crashed reading that many in /proc/self/fd).
@Suite("A stopped server is freed")
struct ServerLifetimeTests {
    @Test(
        "listeners, service and store are freed once the server stops and goes, after serving requests", arguments: StoreBackend.available)
    func stoppedServerIsFreed(_ backend: StoreBackend) throws {
        weak var http: AnyObject?
        weak var admin: AnyObject?
        weak var service: AnyObject?
        weak var store: AnyObject?
        var databaseFile = ""
        do {
            let world = try HTTPWorld(backend, listening: true)
            _ = try world.attest(try world.client(), device: try SyntheticDevice())
            #expect(try world.client().request("GET", "/metrics").status == 200)
            http = world.server.http
            admin = world.server.adminHTTP
            service = world.app.service
            store = world.app.store as AnyObject
            if backend == .sqlite { databaseFile = world.sqliteFile.path }
        }
        #expect(http == nil, "the device-facing listener")
        #expect(admin == nil, "the admin listener")
        #expect(service == nil, "the service")
        #expect(store == nil, "the store")
        if backend == .sqlite {
            #expect(OpenFiles.descriptors(of: databaseFile) == 0)
        }
    }
}
