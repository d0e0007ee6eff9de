import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// A node started while its PostgreSQL database cannot be used runs, answers `unavailable`, and
/// comes up by itself once the database answers.
@Suite("PostgreSQL store opened during an outage", .enabled(if: StoreBackend.available.contains(.postgresql)))
struct StartupRetryTests {
    @Test("answers unavailable until the database exists, then migrates by itself and serves")
    func comesUpByItself() throws {
        let name = "t_late_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let settings = PostgresSettings(uri: try TestPostgresServer.url(database: name), poolSize: 2)
        let admin = try PostgresConnection(PostgresSettings(uri: try TestPostgresServer.url(database: "postgres")))
        defer { try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
        let events = Mutex<[String]>([])
        let store = try PostgresTokenStore.opening(settings: settings, now: { 1_800_000_000 }, retryEvery: .milliseconds(200)) { event in
            let text =
                switch event {
                case .waiting: "waiting"
                case .ready: "ready"
                case .refused(let error): "refused \(error.code)"
                }
            events.withLock { $0.append(text) }
        }
        defer { try? store.close() }
        #expect(events.withLock { $0 } == ["waiting"])
        #expect(throws: StorageError(.unavailable, "")) { try store.checkAvailable() }
        #expect(throws: StorageError(.unavailable, "")) { try store.integrations() }
        #expect(throws: StorageError(.unavailable, "")) { try store.activeToken(hash: [1], at: 0) }

        try admin.execute("CREATE DATABASE \(name)")
        _ = eventually(within: 10) { events.withLock { $0.contains("ready") } }
        #expect(events.withLock { $0 } == ["waiting", "ready"])
        try store.checkAvailable()
        #expect(try store.integrations().isEmpty)
        #expect(try store.databaseTime() != nil)
    }
}
