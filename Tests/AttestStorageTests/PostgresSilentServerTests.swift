import AttestStorage
import AttestTesting
import Dispatch
import Foundation
import Synchronization
import Testing

/// A PostgreSQL server that stops answering without closing anything (decision 0015), made with a
/// proxy in front of the real test server: every call still returns, `unavailable`, within the
/// connection's answer timeout or libpq's connect timeout.
@Suite("PostgreSQL that stops answering", .enabled(if: StoreBackend.available.contains(.postgresql)))
struct PostgresSilentServerTests {
    static let time: Int64 = 1_800_000_000

    /// A migrated database, a proxy in front of its server, and settings that reach it through
    /// the proxy with short timeouts: 0.5 s on the server, 1.5 s for an answer, 2 s to connect.
    struct World {
        let location: TestStoreLocation
        let proxy: SilentProxy
        let settings: PostgresSettings

        init() throws {
            location = try TestStoreLocation(.postgresql)
            _ = try location.open(at: PostgresSilentServerTests.time, connections: 1)
            guard case .postgresql(let direct) = location.location,
                let match = direct.uri.firstMatch(of: #/@127\.0\.0\.1:(\d+)/#), let port = UInt16(match.1)
            else { throw StorageError(.misuse, "the test server's URI names no 127.0.0.1 port") }
            proxy = try SilentProxy(upstreamPort: port)
            settings = PostgresSettings(
                uri: direct.uri.replacingOccurrences(of: "@127.0.0.1:\(port)/", with: "@127.0.0.1:\(proxy.port)/"), poolSize: 2,
                connectTimeoutSeconds: 2, statementTimeoutMilliseconds: 500, answerTimeoutMilliseconds: 1500,
                checkoutTimeoutMilliseconds: 2000)
        }
    }

    @Test("a statement, a new connection and a grouped lookup each fail `unavailable` within their timeout, not after")
    func everyCallReturns() throws {
        let world = try World()
        defer { world.proxy.close() }
        let store = PostgresTokenStore(unconnected: world.settings)
        try store.checkAvailable()
        try store.insertIntegration(PostgresStoreTests.integration("clid_a"), audit: nil)
        #expect(try store.integration(clientID: "clid_a") != nil)
        world.proxy.silence()

        // A pooled connection that stops answering: given up after the answer timeout (1.5 s),
        // and not retried elsewhere (the statement may have run).
        let statement = try #require(Self.bounded { () throws(StorageError) in _ = try store.integration(clientID: "clid_a") })
        #expect(statement.error?.code == .unavailable)
        #expect(statement.elapsed < .milliseconds(2_500), "\(statement.elapsed)")
        // Its replacement cannot connect: libpq's connect_timeout (2 s).
        let readiness = try #require(Self.bounded { () throws(StorageError) in try store.checkAvailable() })
        #expect(readiness.error?.code == .unavailable)
        #expect(readiness.elapsed < .milliseconds(3_500), "\(readiness.elapsed)")
        // A token lookup (answered through a callback, grouped with others) is answered too.
        let lookup = try #require(
            Self.bounded { () throws(StorageError) in _ = try store.activeToken(hash: [UInt8](repeating: 1, count: 32), at: Self.time) })
        #expect(lookup.error?.code == .unavailable)
        #expect(lookup.elapsed < .milliseconds(3_500), "\(lookup.elapsed)")
    }

    @Test(
        "after a timed-out answer, connecting is paced: a caller needing a connection gets `unavailable` at once, and a second later the store reconnects"
    )
    func pacedReconnection() throws {
        let world = try World()
        defer { world.proxy.close() }
        let store = PostgresTokenStore(unconnected: world.settings)
        try store.checkAvailable()
        world.proxy.silence()
        let timedOut = try #require(Self.bounded { () throws(StorageError) in try store.checkAvailable() })
        #expect(timedOut.error?.code == .unavailable)
        // Right after: no connection attempt (it would wait out the 2 s connect timeout).
        let paced = try #require(Self.bounded { () throws(StorageError) in try store.checkAvailable() })
        #expect(paced.error?.code == .unavailable)
        #expect(paced.elapsed < .milliseconds(1_500), "\(paced.elapsed)")  // a connection attempt would wait 2 s
        world.proxy.speak()
        usleep(1_100_000)  // real time: the pool's pause before it dials again (1 s) is libpq's and the pool's own
        try store.checkAvailable()
        #expect(try store.integrations().isEmpty)
    }

    @Test("connections carry TCP keepalives and tcp_user_timeout by default, and the URI's own values win")
    func keepaliveDefaults() throws {
        let location = try TestStoreLocation(.postgresql)
        guard case .postgresql(let settings) = location.location else { return }
        let connection = try PostgresConnection(settings)
        for (keyword, value) in PostgresSettings.keepaliveDefaults { #expect(connection.option(keyword) == value, "\(keyword)") }
        var overridden = settings
        overridden.uri += (settings.uri.contains("?") ? "&" : "?") + "keepalives_idle=42&tcp_user_timeout=0"
        let custom = try PostgresConnection(overridden)
        #expect(custom.option("keepalives_idle") == "42")
        #expect(custom.option("tcp_user_timeout") == "0")
        #expect(custom.option("keepalives") == "1")
    }

    /// Runs `body` on another thread and waits at most 10 s for it: the error it threw (nil for
    /// none) and how long it took; nil when it did not return in time (it hangs on).
    static func bounded(_ body: @escaping @Sendable () throws(StorageError) -> Void) -> (error: StorageError?, elapsed: Duration)? {
        let outcome = Mutex<(error: StorageError?, elapsed: Duration)?>(nil)
        let done = DispatchSemaphore(value: 0)
        let started = ContinuousClock.now
        // A thread of its own: Dispatch's global queue has few threads, and this one may block.
        Thread {
            var thrown: StorageError?
            do throws(StorageError) { try body() } catch { thrown = error }
            let elapsed = ContinuousClock.now - started
            outcome.withLock { $0 = (thrown, elapsed) }
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + 10) == .success else { return nil }
        return outcome.withLock { $0 }
    }
}
