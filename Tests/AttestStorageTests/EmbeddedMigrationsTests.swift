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

    @Test("the build embeds Migrations/<dialect>/*.sql byte for byte, in order", arguments: SQLDialect.allCases)
    func embeddedEqualFiles(_ dialect: SQLDialect) throws {
        let folder = Self.directory.appendingPathComponent(dialect.rawValue, isDirectory: true)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        try #require(!names.isEmpty, "no .sql files in \(folder.path)")
        let embedded = EmbeddedMigrations.all(dialect)
        #expect(names.count == embedded.count)
        for (file, migration) in zip(names, embedded) {
            #expect(file == String(format: "%04d_%@.sql", migration.id, migration.name))
            let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent(file)))
            #expect(bytes == Array(migration.sql.utf8), "\(file) differs from what the build embedded")
        }
    }

    @Test("every dialect has the same migrations, numbered 1, 2, 3 ... without gaps")
    func dialectsAgree() {
        let sqlite = EmbeddedMigrations.sqlite
        #expect(sqlite.map(\.id) == Array(1...sqlite.count))
        #expect(EmbeddedMigrations.postgresql.map(\.id) == sqlite.map(\.id))
        #expect(EmbeddedMigrations.postgresql.map(\.name) == sqlite.map(\.name))
    }
}
