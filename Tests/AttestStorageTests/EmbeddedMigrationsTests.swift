import AttestStorage
import Foundation
import Testing

@Suite("Embedded migrations")
struct EmbeddedMigrationsTests {
    /// `Migrations/` at the package root, found from this file's path.
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // AttestStorageTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("Migrations", isDirectory: true)

    @Test("the embedded migrations equal Migrations/*.sql byte for byte, in order")
    func embeddedEqualFiles() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
        try #require(!names.isEmpty, "no .sql files in \(Self.directory.path)")
        #expect(names.count == EmbeddedMigrations.all.count)
        for (file, embedded) in zip(names, EmbeddedMigrations.all) {
            // NNNN_name.sql
            let stem = file.dropLast(".sql".count)
            let parts = stem.split(separator: "_", maxSplits: 1)
            try #require(parts.count == 2, "\(file) is not NNNN_name.sql")
            #expect(parts[0].count == 4 && Int(parts[0]) == embedded.id, "\(file) vs embedded id \(embedded.id)")
            #expect(String(parts[1]) == embedded.name, "\(file) vs embedded name \(embedded.name)")
            let bytes = try [UInt8](Data(contentsOf: Self.directory.appendingPathComponent(file)))
            #expect(bytes == Array(embedded.sql.utf8), "\(file) differs from EmbeddedMigrations.swift")
        }
    }

    @Test("the embedded migration ids run 1, 2, 3 ... without gaps")
    func idsAreContiguous() {
        #expect(EmbeddedMigrations.all.map(\.id) == Array(1...EmbeddedMigrations.all.count))
    }
}
