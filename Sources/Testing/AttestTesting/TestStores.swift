package import AttestStorage
import Foundation

/// The storage backends a test can run against.
package enum StoreBackend: String, Sendable, CaseIterable, CustomStringConvertible {
    case sqlite
    case postgresql

    package var description: String { rawValue }

    /// The backends this test run covers: SQLite always; PostgreSQL when
    /// `ATTESTD_TEST_POSTGRES_URL` names a server (scripts/test starts one), or when
    /// `ATTESTD_REQUIRE_POSTGRES=1` demands it (then a missing server fails the tests, not skips them).
    package static var available: [StoreBackend] {
        TestPostgresServer.url != nil || TestPostgresServer.required ? [.sqlite, .postgresql] : [.sqlite]
    }
}

/// The PostgreSQL server the tests may use, from the environment.
package enum TestPostgresServer {
    /// A libpq URI of a role that may create databases (scripts/lib/postgres.sh makes one).
    package static var url: String? {
        ProcessInfo.processInfo.environment["ATTESTD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }
    /// True when the run must include PostgreSQL (scripts/test sets it).
    package static var required: Bool { ProcessInfo.processInfo.environment["ATTESTD_REQUIRE_POSTGRES"] == "1" }

    /// `url` with its database name replaced by `database`.
    package static func url(database: String) throws -> String {
        guard let url else {
            throw StorageError(.unavailable, "ATTESTD_TEST_POSTGRES_URL is not set (scripts/test starts a server and sets it)")
        }
        let query = url.firstIndex(of: "?").map { String(url[$0...]) } ?? ""
        let base = url.firstIndex(of: "?").map { String(url[..<$0]) } ?? url
        guard let slash = base.lastIndex(of: "/"), base[..<slash].hasSuffix("/") == false else {
            throw StorageError(.misuse, "ATTESTD_TEST_POSTGRES_URL must name a database")
        }
        return base[...slash] + database + query
    }
}

/// A fresh, empty store location for one test: a SQLite file in a new temporary directory, or a
/// new PostgreSQL database on the test server. Removed on deinit.
package final class TestStoreLocation: Sendable {
    package let backend: StoreBackend
    package let location: StoreLocation
    private let directory: URL
    private let databaseName: String?

    package init(_ backend: StoreBackend) throws {
        self.backend = backend
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestd-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        switch backend {
        case .sqlite:
            databaseName = nil
            location = .sqlite(path: directory.appendingPathComponent("attestd.sqlite").path)
        case .postgresql:
            let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            let admin = try PostgresConnection(PostgresSettings(uri: try TestPostgresServer.url(database: "postgres")))
            try admin.execute("CREATE DATABASE \(name)")
            databaseName = name
            location = .postgresql(PostgresSettings(uri: try TestPostgresServer.url(database: name), poolSize: 4))
        }
    }

    /// The location's value as `--db` takes it.
    package var argument: String {
        switch location {
        case .sqlite(let path): path
        case .postgresql(let settings): settings.uri
        }
    }

    /// The password in a PostgreSQL URI, to check that no output shows it.
    package var password: String? {
        guard case .postgresql(let settings) = location, let start = settings.uri.firstRange(of: "://") else { return nil }
        let authority = settings.uri[start.upperBound...].prefix { $0 != "/" }
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return nil }
        return String(authority[authority.index(after: colon)..<at])
    }

    /// Opens (and migrates) a store on this location, as attestd does.
    package func open(at time: Int64, connections: Int = 4) throws -> any TokenStore {
        try TokenStores.open(location, connections: connections, busyTimeout: .milliseconds(2000), migrateAt: time)
    }

    /// Writes a challenge row straight into the database, past the store's check that its
    /// integration is active: the row that a challenge issued while a revocation commits can
    /// leave behind on PostgreSQL, which spending must then refuse (tests of that refusal).
    package func insertChallengeRow(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws {
        let columns = "INSERT INTO challenges (id, client_id, created_at, expires_at)"
        let arguments: [SQLValue] = [.blob(id), .text(clientID), .integer(createdAt), .integer(expiresAt)]
        switch location {
        case .sqlite(let path):
            let database = try SQLiteDatabase(path: path, create: false)
            try database.immediateTransaction { try database.execute(columns + " VALUES (?, ?, ?, ?)", arguments: arguments) }
        case .postgresql(let settings):
            try PostgresConnection(settings).query(columns + " VALUES ($1, $2, $3, $4)", arguments)
        }
    }

    deinit {
        if let databaseName,
            let admin = try? PostgresConnection(PostgresSettings(uri: (try? TestPostgresServer.url(database: "postgres")) ?? ""))
        {
            try? admin.execute("DROP DATABASE IF EXISTS \(databaseName) WITH (FORCE)")
        }
        try? FileManager.default.removeItem(at: directory)
    }
}
