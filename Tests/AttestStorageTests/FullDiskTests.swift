import AttestStorage
import AttestTesting
import Testing

/// With SQLite on a full disk reads go on, so readiness must hear of the writes that fail, and be
/// ready again once writes succeed.
@Suite("SQLite store on a full disk")
struct FullDiskTests {
    @Test("a write refused for want of disk makes the readiness check fail until a write succeeds again")
    func readinessSeesFailingWrites() throws {
        let location = try TestStoreLocation(.sqlite)
        let store = try #require(try location.open(at: 0) as? SQLiteTokenStore)
        try store.checkAvailable()
        let pages = try store.statistics().bytes / 4096
        try store.limitPagesForTesting(Int(pages))
        var full: StorageError?
        // Enough rows to fill the headroom the write-ahead log leaves after every migration (it grows with them).
        for index in 0..<5000 where full == nil {
            do {
                try store.insertIntegration(
                    IntegrationRecord(
                        clientID: "clid_\(index)", workspaceID: "ws", name: String(repeating: "n", count: 190), teamID: "ABCDE12345",
                        bundleIDs: ["com.example.\(index)"], environments: [.production], status: .active, createdAt: 0, revokedAt: nil),
                    audit: nil)
            } catch {
                full = error
            }
        }
        #expect(full?.code == .full)
        // Reads still work, and yet the store is not ready.
        #expect(try !store.integrations().isEmpty)
        #expect(throws: StorageError(.full, "")) { try store.checkAvailable() }
        // Space again: the probe write succeeds and the store is ready.
        try store.limitPagesForTesting(1_000_000)
        try store.checkAvailable()
        try store.checkAvailable()
    }
}
