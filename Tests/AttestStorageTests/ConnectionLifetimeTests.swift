import AttestStorage
import AttestTesting
import Foundation
import Testing

/// A connection, and every file it opened, is closed once its last user lets it go: a store that
/// is dropped leaves no descriptor behind (a long-lived attestd opens stores for backups, and the
/// test suite opens hundreds).
@Suite("SQLite connections close when let go")
struct ConnectionLifetimeTests {
    @Test("a connection whose cached statements have run closes its files when dropped")
    func cachedStatementsDoNotHoldTheConnection() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("cached.sqlite")
        weak var released: SQLiteDatabase?
        do {
            let database = try SQLiteDatabase(path: path)
            let statement = try database.cachedStatement("SELECT count(*) FROM sqlite_schema")
            #expect(try statement.step())
            released = database
            #expect(OpenFiles.descriptors(of: path) > 0)
        }
        #expect(released == nil, "the connection outlived its last user")
        #expect(OpenFiles.descriptors(of: path) == 0)
    }

    @Test("a statement of the caller's keeps its connection open until the statement goes")
    func callersStatementHoldsTheConnection() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("held.sqlite")
        weak var released: SQLiteDatabase?
        var statement: SQLiteStatement?
        do {
            let database = try SQLiteDatabase(path: path)
            statement = try database.prepare("SELECT 1")
            released = database
        }
        #expect(released != nil)
        #expect(try statement?.step() == true)
        statement = nil
        #expect(released == nil)
    }

    @Test("a store used for reads, a cached lookup and writes closes every file when dropped")
    func storeClosesItsFiles() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        do {
            let store = try SQLiteTokenStore(path: path, readerCount: 3, migrateAt: 1_000)
            let integration = IntegrationRecord(
                clientID: "clid_lifetime", workspaceID: "ws", name: "App", teamID: "ABCDE12345", bundleIDs: ["com.example.a"],
                environments: [.production], status: .active, createdAt: 1_000, revokedAt: nil)
            try store.insertIntegration(integration, audit: nil)
            _ = try store.activeToken(hash: [UInt8](repeating: 1, count: 32), at: 1_000)
            _ = try store.statistics()
            #expect(OpenFiles.descriptors(of: path) >= 4)
        }
        #expect(OpenFiles.descriptors(of: path) == 0)
    }
}
