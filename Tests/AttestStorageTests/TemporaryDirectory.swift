import AttestStorage
import Foundation

/// A fresh directory under the system temp directory, removed with everything in it on deinit.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("attest-storage-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// The path of `name` inside the directory.
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

extension SQLiteDatabase {
    /// The first column of the first row of `sql`, or nil when there is no row.
    func scalar(_ sql: String, _ arguments: [SQLValue] = []) throws -> SQLValue? {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        return try statement.step() ? statement.value(at: 0) : nil
    }

    /// True when the schema has a table or index named `name`.
    func hasSchemaObject(_ name: String) throws -> Bool {
        try scalar("SELECT count(*) FROM sqlite_schema WHERE name = ?", [.text(name)]) == .integer(1)
    }
}
