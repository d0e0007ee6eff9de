import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// What only the PostgreSQL backend has: connections that die and come back, migrations under
/// an advisory lock for nodes starting together, and a URI that may hold a password.
@Suite("PostgreSQL store", .enabled(if: StoreBackend.available.contains(.postgresql)))
struct PostgresStoreTests {
    static let time: Int64 = 1_800_000_000

    /// The backends of this suite's database, seen from another connection of the same role.
    static func terminateOtherSessions(_ location: TestStoreLocation) throws {
        guard case .postgresql(let settings) = location.location else { return }
        let admin = try PostgresConnection(settings)
        try admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
    }

    @Test("the first request on a pooled connection that the server closed succeeds on a new one")
    func reconnectsAfterTermination() throws {
        let location = try TestStoreLocation(.postgresql)
        let store = try location.open(at: Self.time, connections: 2)
        try store.insertIntegration(Self.integration("clid_a"), audit: nil)
        #expect(try store.integration(clientID: "clid_a") != nil)
        try Self.terminateOtherSessions(location)
        #expect(try store.integration(clientID: "clid_a") != nil)
        try store.insertIntegration(Self.integration("clid_b"), audit: nil)
        #expect(try store.integrations().count == 2)
    }

    @Test("a text parameter holding a NUL is refused as misuse, never cut short by libpq (decision 0020)")
    func refusesNULInText() throws {
        let location = try TestStoreLocation(.postgresql)
        let store = try location.open(at: Self.time, connections: 1)
        try store.insertIntegration(Self.integration("clid_a"), audit: nil)
        #expect(throws: StorageError(.misuse, "")) { try store.integration(clientID: "clid_a\u{0}anything") }
        #expect(throws: StorageError(.misuse, "")) { try store.insertIntegration(Self.integration("clid_b\u{0}"), audit: nil) }
        #expect(try store.integrations().map(\.clientID) == ["clid_a"])
    }

    @Test("nodes starting together on an empty database apply each migration exactly once")
    func concurrentMigrations() throws {
        let location = try TestStoreLocation(.postgresql)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            do {
                _ = try location.open(at: Self.time, connections: 1)
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        guard case .postgresql(let settings) = location.location else { return }
        let store = try PostgresTokenStore(existing: settings)
        #expect(try store.appliedMigrationIDs() == EmbeddedMigrations.postgresql.map(\.id))
    }

    /// A migrated database of its own (dropped when `location` goes) and a connection to it.
    struct MigratedDatabase {
        let location: TestStoreLocation
        let settings: PostgresSettings
        let connection: PostgresConnection

        init() throws {
            location = try TestStoreLocation(.postgresql)
            _ = try location.open(at: PostgresStoreTests.time)
            guard case .postgresql(let settings) = location.location else { throw StorageError.misuse("not PostgreSQL") }
            self.settings = settings
            connection = try PostgresConnection(settings)
        }
    }

    /// A revocation in progress: holds the integration's row as `revokeIntegration` does, until
    /// `commit` deletes what revocation deletes (a refresh that locked a challenge before the
    /// integration would deadlock with it here).
    final class RevocationInProgress {
        let connection: PostgresConnection

        init(_ location: TestStoreLocation, clientID: String) throws {
            guard case .postgresql(let settings) = location.location else { throw StorageError.misuse("not PostgreSQL") }
            connection = try PostgresConnection(settings)
            try connection.execute("BEGIN")
            try connection.query("SELECT status FROM integrations WHERE client_id = $1 FOR UPDATE", [.text(clientID)])
        }

        func commit(clientID: String) throws {
            try connection.query("UPDATE integrations SET status = 'revoked', revoked_at = 1 WHERE client_id = $1", [.text(clientID)])
            try connection.query("DELETE FROM tokens WHERE client_id = $1", [.text(clientID)])
            try connection.query("DELETE FROM challenges WHERE client_id = $1", [.text(clientID)])
            try connection.execute("COMMIT")
        }

        /// Whether another session of this database waits for a lock now (the one this holds).
        func someoneWaits() -> Bool {
            let rows = try? connection.query(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
            return (rows?.int64(0, 0) ?? 0) > 0
        }
    }

    /// Runs `body` on its own thread; `outcome` is nil until it returns.
    final class Running<T: Sendable>: @unchecked Sendable {
        // @unchecked: `value` is written and read under `lock`.
        private let lock = NSLock()
        private var value: Result<T, any Error>?
        private let done = DispatchSemaphore(value: 0)

        init(_ body: @escaping @Sendable () throws -> T) {
            Thread.detachNewThread {
                let result = Result { try body() }
                self.lock.withLock { self.value = result }
                self.done.signal()
            }
        }

        var outcome: Result<T, any Error>? { lock.withLock { value } }

        func wait() throws -> T {
            done.wait()
            guard let outcome else { throw StorageError.misuse("finished without an outcome") }
            return try outcome.get()
        }
    }

    @Test("a refresh waits for a revocation holding the integration's row, without deadlocking, then refuses: no token outlives it")
    func refreshWaitsForRevocation() throws {
        let world = try TokenStoreContractTests.World(.postgresql)
        try world.register(1)
        let challenge = try world.challenge(2)
        let token = world.token(2, keySeed: 1)
        let revocation = try RevocationInProgress(world.location, clientID: world.integration.clientID)
        let store = world.store
        let began = ContinuousClock.now
        let refresh = Running {
            try store.advanceCounter(
                keyID: world.device(1).keyID, from: 0, to: 1, at: Self.time, token: token, consumingChallenge: challenge,
                keepingLatest: nil)
        }
        #expect(eventually { revocation.someoneWaits() }, "the refresh never waited on a lock")
        #expect(refresh.outcome == nil, "the refresh must wait for the revocation's lock")
        try revocation.commit(clientID: world.integration.clientID)
        // The revocation deleted the pending challenge too, so that is what the refresh finds.
        #expect(try refresh.wait() == .challengeUsed)
        // Had the refresh locked the challenge before the integration, it would have deadlocked with
        // the revocation's DELETE of challenges until PostgreSQL broke the cycle after
        // deadlock_timeout (1 s): the revocation's commit would have failed, or the refresh run again.
        #expect(try #require(store as? PostgresTokenStore).conflictsRetried == 0)
        #expect(ContinuousClock.now - began < .seconds(10), "the refresh hung")
        #expect(try world.store.activeToken(hash: token.tokenHash, at: Self.time) == nil)
        #expect(try world.store.snapshot(at: Self.time).tokens.isEmpty)
    }

    @Test("a registration waits for a revocation holding the integration's row, without deadlocking, then refuses: no device outlives it")
    func registrationWaitsForRevocation() throws {
        let world = try TokenStoreContractTests.World(.postgresql)
        let challenge = try world.challenge(3)
        let revocation = try RevocationInProgress(world.location, clientID: world.integration.clientID)
        let store = world.store
        let began = ContinuousClock.now
        let registration = Running {
            try store.registerDevice(world.device(3), firstToken: world.token(3, keySeed: 3), consumingChallenge: challenge, at: Self.time)
        }
        #expect(eventually { revocation.someoneWaits() }, "the registration never waited on a lock")
        #expect(registration.outcome == nil, "the registration must wait for the revocation's lock")
        try revocation.commit(clientID: world.integration.clientID)
        // The revocation deleted the pending challenge too, so that is what the registration finds.
        #expect(try registration.wait() == .challengeUsed)
        // Had the registration locked the challenge before the integration, it would have deadlocked with
        // the revocation's DELETE of challenges until PostgreSQL broke the cycle after
        // deadlock_timeout (1 s): the revocation's commit would have failed, or the registration run again.
        #expect(try #require(store as? PostgresTokenStore).conflictsRetried == 0)
        #expect(ContinuousClock.now - began < .seconds(10), "the registration hung")
        #expect(try world.store.device(keyID: world.device(3).keyID) == nil)
    }

    @Test("issuing a challenge locks nothing in its integration's row (a row lock is WAL-logged: the commit would wait for a flush)")
    func challengeLocksNoIntegrationRow() throws {
        let location = try TestStoreLocation(.postgresql)
        let store = try location.open(at: Self.time, connections: 1)
        try store.insertIntegration(Self.integration("clid_a"), audit: nil)
        guard case .postgresql(let settings) = location.location else { throw StorageError.misuse("not PostgreSQL") }
        let connection = try PostgresConnection(settings)
        let lockers = "SELECT xmax::text FROM integrations WHERE client_id = 'clid_a'"
        let before = try connection.query(lockers).string(0, 0)
        for seed in UInt8(1)...3 {
            let id = [UInt8](repeating: seed, count: 32)
            #expect(try store.insertChallenge(id: id, clientID: "clid_a", createdAt: Self.time, expiresAt: Self.time + 300))
        }
        #expect(try connection.query(lockers).string(0, 0) == before)
        #expect(try connection.query("SELECT relpersistence::text FROM pg_class WHERE relname = 'challenges'").string(0, 0) == "u")
    }

    @Test("a BYTEA[] bound as one binary parameter comes back element for element, empty elements included")
    func byteaArray() throws {
        let database = try MigratedDatabase()
        let blobs: [[UInt8]] = [[], [0], [0xff, 0x00, 0x7f], [UInt8](repeating: 0xab, count: 32)]
        let bytes = try database.connection.query("SELECT unnest($1::bytea[])", [PostgresArrays.bytea(blobs)])
        #expect((0..<bytes.count).map { bytes.bytes($0, 0) } == blobs)
        #expect(try database.connection.query("SELECT cardinality($1::bytea[])::bigint", [PostgresArrays.bytea([])]).int64(0, 0) == 0)
    }

    @Test("sessions plan each statement once (plan_cache_mode) and bound every statement and lock wait by the timeout")
    func sessionSettings() throws {
        let database = try MigratedDatabase()
        #expect(try database.connection.query("SELECT current_setting('plan_cache_mode')").string(0, 0) == "force_generic_plan")
        for name in ["statement_timeout", "lock_timeout"] {
            let milliseconds = try database.connection.query("SELECT setting FROM pg_settings WHERE name = $1", [.text(name)]).string(0, 0)
            #expect(milliseconds == String(database.settings.statementTimeoutMilliseconds), "\(name)")
        }
    }

    @Test("the purge's batches are planned on the indexes, as sessions plan them (one plan for every parameter)")
    func purgePlans() throws {
        let database = try MigratedDatabase()
        let connection = database.connection
        try connection.query(
            "INSERT INTO integrations (client_id, workspace_id, name, team_id, allowed_environments, status, created_at) "
                + "VALUES ('clid_plan', 'ws', 'n', 'ABCDE12345', 'production', 'active', 0)")
        try connection.query(
            "INSERT INTO tokens (token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at) "
                + "SELECT sha256(int8send(i)), 'clid_plan', 'ws', sha256(int8send(i % 100)), 'messages', 0, i FROM generate_series(1, 20000) i"
        )
        try connection.query(
            "INSERT INTO challenges (id, client_id, created_at, expires_at) "
                + "SELECT sha256(int8send(-i)), 'clid_plan', 0, i FROM generate_series(1, 20000) i")
        try connection.execute("ANALYZE tokens")
        try connection.execute("ANALYZE challenges")
        #expect(try connection.query("SELECT current_setting('plan_cache_mode')").string(0, 0) == "force_generic_plan")
        for (name, statement) in [("tokens", UpkeepSQL.purgeTokens), ("challenges", UpkeepSQL.purgeChallenges)] {
            try connection.execute("PREPARE purge_\(name) (bigint, bigint) AS \(statement.postgresql)")
            let plan = try connection.query("EXPLAIN EXECUTE purge_\(name) (100, 2000)")
            let text = (0..<plan.count).compactMap { plan.string($0, 0) }.joined(separator: "\n")
            #expect(!text.contains("Seq Scan"), "\(name): \(text)")
            #expect(text.contains("Index Cond: (\(name == "tokens" ? "token_hash" : "id") = ANY"), "\(name): \(text)")
        }
    }

    @Test("a database that records a migration this binary does not know is refused")
    func unknownMigrationRefused() throws {
        let location = try TestStoreLocation(.postgresql)
        _ = try location.open(at: Self.time)
        guard case .postgresql(let settings) = location.location else { return }
        try PostgresConnection(settings).query("INSERT INTO schema_migrations (id, name, applied_at) VALUES (999, 'future', 0)")
        #expect(throws: StorageError(.migrationUnknown, "")) { _ = try location.open(at: Self.time) }
    }

    @Test("an unreachable server is `unavailable` within the connect timeout, and the password is in no message")
    func unreachableServer() throws {
        let password = "s3cret-password-in-uri"
        let port = try Self.closedPort()
        let settings = PostgresSettings(uri: "postgresql://attestd:\(password)@127.0.0.1:\(port)/attestd", connectTimeoutSeconds: 2)
        let started = ContinuousClock.now
        let store = PostgresTokenStore(unconnected: settings)
        do {
            try store.checkAvailable()
            Issue.record("an unreachable server answered")
        } catch {
            #expect(error.code == .unavailable)
            #expect(!error.description.contains(password))
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        do {
            _ = try PostgresTokenStore(settings: settings, migrateAt: Self.time)
            Issue.record("opening an unreachable server succeeded")
        } catch {
            #expect(error.code == .unavailable)
            #expect(!error.description.contains(password))
        }
    }

    @Test("a wrong password is refused without the password in the message")
    func wrongPassword() throws {
        let location = try TestStoreLocation(.postgresql)
        guard case .postgresql(var settings) = location.location else { return }
        let wrong = "definitely-not-the-password"
        settings.uri = settings.uri.replacingOccurrences(of: #":[^:@/]+@"#, with: ":\(wrong)@", options: .regularExpression)
        do {
            _ = try PostgresTokenStore(settings: settings, migrateAt: Self.time)
            Issue.record("a wrong password was accepted")
        } catch {
            #expect(error.code == .unavailable)
            #expect(!error.description.contains(wrong))
        }
    }

    static func integration(_ clientID: String) -> IntegrationRecord {
        IntegrationRecord(
            clientID: clientID, workspaceID: "ws", name: "n", teamID: "ABCDE12345", bundleIDs: ["com.example.a"],
            environments: [.production], status: .active, createdAt: time, revokedAt: nil)
    }

    /// A loopback port nothing listens on.
    static func closedPort() throws -> Int {
        let socket = Socket.bindLoopback()
        defer { Socket.close(socket.fd) }
        return socket.port
    }
}

/// A bound but never listening loopback socket: connections to its port are refused.
enum Socket {
    static func bindLoopback() -> (fd: Int32, port: Int) {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    static func close(_ fd: Int32) { _ = Glibc.close(fd) }
}

@Suite("Store locations")
struct StoreLocationTests {
    @Test("a file path means SQLite; a postgresql:// or postgres:// URI (any case) means PostgreSQL; empty is refused")
    func parsing() throws {
        #expect(try StoreLocation("attestd.sqlite") == .sqlite(path: "attestd.sqlite"))
        #expect(try StoreLocation("/var/lib/attestd/postgresql.sqlite").kind == .sqlite)
        #expect(try StoreLocation("postgresql://u@h/d").kind == .postgresql)
        #expect(try StoreLocation("POSTGRES://u@h/d").kind == .postgresql)
        #expect(throws: StorageError(.misuse, "")) { try StoreLocation("") }
    }

    @Test(
        "URIs are shown without their password",
        arguments: [
            ("postgresql://attestd:pw@127.0.0.1:5432/attestd", "postgresql://attestd:***@127.0.0.1:5432/attestd"),
            ("postgres://u@h/db?sslmode=require&password=pw", "postgres://u@h/db?sslmode=require&password=***"),
            ("postgresql:///attestd?host=/run/postgresql", "postgresql:///attestd?host=/run/postgresql"),
            ("postgresql://a%40b:p%3Aw@h:1/d", "postgresql://a%40b:***@h:1/d"),
            // Decision 0023: every parameter whose name ends in "password", also percent-encoded.
            ("postgresql://u@h/d?sslpassword=key-pw&sslmode=require", "postgresql://u@h/d?sslpassword=***&sslmode=require"),
            ("postgresql://u@h/d?pass%77ord=pw", "postgresql://u@h/d?pass%77ord=***"),
            ("postgresql://u@h/d?SSL%50ASSWORD=pw&password=", "postgresql://u@h/d?SSL%50ASSWORD=***&password=***"),
            // A raw '/' or '@' in the password (which libpq reads otherwise) is hidden whole.
            ("postgresql://u:pa/ss@h/d", "postgresql://u:***@h/d"), ("postgresql://u:p@ss@h/d", "postgresql://u:***@h/d"),
        ])
    func redaction(_ uri: String, _ shown: String) throws {
        #expect(PostgresSettings(uri: uri).redactedURI == shown)
        #expect(try StoreLocation(uri).redacted == shown)
    }

    @Test(
        "a URI libpq cannot read, or would read part of the password from, is refused as misuse without libpq's words (decision 0023)",
        arguments: [
            ("postgresql://attestd:pa%zzword@127.0.0.1:1/attestd", "zzword"), ("postgresql://attestd:100%@127.0.0.1:1/attestd", "100%"),
            ("postgresql://attestd:pa/ss-word@127.0.0.1:1/attestd", "ss-word"),
            ("postgresql://attestd:pa@ss-word@127.0.0.1:1/attestd", "ss-word"),
        ])
    func malformedURI(_ uri: String, _ secret: String) {
        do {
            _ = try PostgresConnection(PostgresSettings(uri: uri, connectTimeoutSeconds: 2))
            Issue.record("connected with \(uri)")
        } catch {
            #expect(error.code == .misuse)
            #expect(!error.description.contains(secret), "\(error)")
            #expect(error.description.contains("%25"))
        }
    }

}
