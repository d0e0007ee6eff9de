import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// The real `attestd` binary (`swift test` builds the executables beside the test bundle). Its
/// stderr is read as it comes, on a thread of its own, so that a chatty process never blocks
/// on a full pipe and a test waits for a log line instead of for time.
final class AttestdProcess: Sendable {
    static let binary = Bundle.main.bundleURL.appendingPathComponent("attestd")
    let process = Process()
    let directory: URL
    /// The log so far, and whether stderr has ended; `grew` is signalled at each change.
    private let log = Mutex<(text: String, ended: Bool)>(("", false))
    private let grew = NSCondition()

    init(arguments: [String], directory: URL) throws {
        self.directory = directory
        let errors = Pipe()
        process.executableURL = Self.binary
        // The admin listener on a free port too: its default (8081) would collide between tests.
        // (Only beside --listen: `attestd --version` must stay alone.)
        let serves = arguments.contains("--listen") && !arguments.contains("--admin-listen")
        process.arguments = serves ? arguments + ["--admin-listen", "127.0.0.1:0"] : arguments
        process.currentDirectoryURL = directory
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let reading = errors.fileHandleForReading
        let reader = Thread { [self] in
            while true {
                let chunk = reading.availableData
                grew.lock()
                log.withLock {
                    if chunk.isEmpty { $0.ended = true } else { $0.text += String(decoding: chunk, as: UTF8.self) }
                }
                grew.broadcast()
                grew.unlock()
                if chunk.isEmpty { return }
            }
        }
        reader.start()
    }

    /// Waits at most `seconds` until `condition` holds of the log (or stderr ended); returns the log.
    private func awaitLog(within seconds: Double, until condition: (String, Bool) -> Bool) -> (text: String, ended: Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        grew.lock()
        defer { grew.unlock() }
        while true {
            let now = log.withLock { $0 }
            if condition(now.text, now.ended) || now.ended || !grew.wait(until: deadline) { return log.withLock { $0 } }
        }
    }

    /// Waits for the process to exit (at most `seconds`) and returns its status and stderr.
    func finish(within seconds: Double = 10) -> (status: Int32, log: String) {
        let exited = DispatchSemaphore(value: 0)
        let process = process
        DispatchQueue.global().async {
            process.waitUntilExit()
            exited.signal()
        }
        if exited.wait(timeout: .now() + seconds) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
        let text = awaitLog(within: 10) { _, ended in ended }.text
        return (process.terminationStatus, text)
    }

    /// Whether the log shows `text` within `seconds`.
    func logShows(_ text: String, within seconds: Double) -> Bool {
        awaitLog(within: seconds) { log, _ in log.contains(text) }.text.contains(text)
    }

    /// The port from the "listening" log line (waits up to 15 s for it).
    func listeningPort() -> UInt16? {
        let marker = #""listen.port":"#
        let text = awaitLog(within: 15) { log, _ in log.contains(marker) }.text
        guard let range = text.range(of: marker) else { return nil }
        return UInt16(text[range.upperBound...].prefix { $0.isNumber })
    }
}

@Suite("attestd, the real binary")
struct AttestdProcessTests {
    @Test("starts with no setup on port 0, serves, and exits 0 on SIGTERM")
    func startAndStop() throws {
        let directory = try temporaryDirectory()
        let attestd = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0"], directory: directory)
        let port = try #require(attestd.listeningPort())
        let client = try RawHTTPClient(port: port)
        #expect(try client.request("GET", "/healthz").status == 200)
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("attestd.sqlite").path))
        attestd.process.terminate()  // SIGTERM
        let (status, log) = attestd.finish()
        #expect(status == 0)
        #expect(log.contains("draining"))
    }

    @Test("writes request lines in blocks: a held line within a second or two while it runs, the rest when it stops")
    func requestLinesReachTheLog() throws {
        let directory = try temporaryDirectory()
        // The test stands in for nginx on loopback: only a trusted proxy's X-Request-Id is adopted.
        let attestd = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0", "--trusted-proxy", "127.0.0.1/32"], directory: directory)
        let port = try #require(attestd.listeningPort())
        let client = try RawHTTPClient(port: port)
        #expect(try client.request("GET", "/no-such-route", headers: [("X-Request-Id", "while-running")]).status == 404)
        #expect(attestd.logShows(#""request.id":"while-running""#, within: 5))
        #expect(try client.request("GET", "/no-such-route", headers: [("X-Request-Id", "just-before-the-stop")]).status == 404)
        attestd.process.terminate()  // SIGTERM
        let (status, log) = attestd.finish()
        #expect(status == 0)
        #expect(log.contains(#""request.id":"just-before-the-stop""#))
    }

    @Test("keeps serving across purge ticks (the purge timer once trapped on the wrong queue)")
    func survivesPurge() throws {
        let directory = try temporaryDirectory()
        let attestd = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0", "--purge-interval", "1"], directory: directory)
        let port = try #require(attestd.listeningPort())
        func lastPurge() -> Int? {
            let metrics = try? RawHTTPClient(port: port).request("GET", "/metrics").text
            let line = metrics?.split(separator: "\n").first { $0.hasPrefix("attestd_last_purge_timestamp_seconds ") }
            return line.flatMap { Int($0.split(separator: " ")[1]) }
        }
        // Two purge ticks, a second apart: the gauge moves on.
        var first = 0
        #expect(
            eventually {
                first = lastPurge() ?? 0; return first > 0
            })
        #expect(eventually { (lastPurge() ?? 0) > first })
        #expect(attestd.process.isRunning)
        #expect(try RawHTTPClient(port: port).request("GET", "/healthz").status == 200)
        attestd.process.terminate()
        #expect(attestd.finish().status == 0)
    }

    @Test("exits 64 with usage on a bad flag and 0 on --help")
    func usage() throws {
        let directory = try temporaryDirectory()
        let bad = try AttestdProcess(arguments: ["--listen", "nowhere"], directory: directory).finish()
        #expect(bad.status == 64)
        #expect(bad.log.contains("usage: attestd"))
        #expect(try AttestdProcess(arguments: ["--help"], directory: directory).finish().status == 0)
        let version = try AttestdProcess(arguments: ["--version"], directory: directory).finish()
        #expect(version.status == 0)
        #expect(version.log.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("attestd.sqlite").path))
    }

    @Test("refuses to start on a database with a migration it does not know")
    func unknownMigration() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("attestd.sqlite").path
        do {
            let store = try SQLiteTokenStore(path: path, readerCount: 1, migrateAt: 0)
            _ = store
            let database = try SQLiteDatabase(path: path)
            try database.immediateTransaction {
                try database.execute("INSERT INTO schema_migrations (id, name, applied_at) VALUES (9999, 'from_the_future', 0)")
            }
        }
        let (status, log) = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0"], directory: directory).finish()
        #expect(status == 1)
        #expect(log.contains("refusing to start"))
        #expect(log.contains("9999"))
    }

    @Test("refuses to start on a corrupt database file")
    func corruptDatabase() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("attestd.sqlite")
        try Data(repeating: 0x41, count: 8192).write(to: path)
        let (status, log) = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0"], directory: directory).finish()
        #expect(status == 1)
        #expect(log.contains("refusing to start"))
    }

    @Test("refuses to start with a missing trust anchor, gateway secret or database directory, saying which in one sentence")
    func unreadableFiles() throws {
        let directory = try temporaryDirectory()
        for (arguments, says) in [
            (["--trust-anchor", "/nonexistent.pem"], "the trust anchor file /nonexistent.pem does not exist"),
            (["--gateway-secret-file", "/nonexistent.secret"], "the gateway secret file /nonexistent.secret does not exist"),
            (["--db", "/nonexistent/dir/attestd.sqlite"], "the directory /nonexistent/dir does not exist"),
        ] {
            let (status, log) = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0"] + arguments, directory: directory).finish()
            #expect(status == 1)
            #expect(log.contains("refusing to start"))
            #expect(log.contains(says), "\(log)")
            #expect(!log.contains("NSCocoaErrorDomain"))
        }
    }

    @Test(
        "serves from PostgreSQL given a postgresql:// URI, says so on /healthz and /readyz, and logs no password",
        .enabled(if: StoreBackend.available.contains(.postgresql)))
    func postgresStore() throws {
        let location = try TestStoreLocation(.postgresql)
        let directory = try temporaryDirectory()
        let attestd = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0", "--db", location.argument], directory: directory)
        let port = try #require(attestd.listeningPort())
        let client = try RawHTTPClient(port: port)
        let health = try client.request("GET", "/healthz")
        #expect(health.text.contains(#""storage":"postgresql""#))
        #expect(try client.request("GET", "/readyz").status == 200)
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("attestd.sqlite").path))
        attestd.process.terminate()
        let (status, log) = attestd.finish()
        #expect(status == 0)
        let password = try #require(location.argument.split(separator: ":").dropFirst(2).first?.split(separator: "@").first)
        #expect(!log.contains(String(password)))
        #expect(log.contains(":***@"))
    }

    @Test(
        "started while PostgreSQL cannot be reached, runs and answers 503 with Retry-After (readiness too), logs no password, stops cleanly"
    )
    func unreachablePostgres() throws {
        let directory = try temporaryDirectory()
        let attestd = try AttestdProcess(
            arguments: ["--listen", "127.0.0.1:0", "--db", "postgresql://attestd:hunter2-secret@127.0.0.1:1/attestd"], directory: directory)
        let port = try #require(attestd.listeningPort())
        let client = try RawHTTPClient(port: port)
        let ready = try client.request("GET", "/readyz")
        #expect(ready.status == 503)
        #expect(ready.header("Retry-After") != nil)
        #expect(try client.request("GET", "/healthz").status == 200)
        let challenge = try client.postJSON("/v1/challenge", #"{"client_id":"clid_00000000000000000000000000000000"}"#)
        #expect(challenge.status == 503)
        attestd.process.terminate()
        let (status, log) = attestd.finish()
        #expect(status == 0)
        #expect(log.contains("the database does not answer"))
        #expect(!log.contains("hunter2-secret"))
    }

    @Test("exits 1 at a stop whose final checkpoint fails (a reader holds the log), and 0 at a clean one")
    func uncleanStopExitsOne() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("attestd.sqlite").path
        let attestd = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0"], directory: directory)
        _ = try #require(attestd.listeningPort())
        // A reader in the middle of a statement (its implicit read transaction open until reset):
        // the TRUNCATE checkpoint cannot empty the log.
        let reader = try SQLiteDatabase(path: path, create: false)
        let statement = try reader.prepare("SELECT count(*) FROM schema_migrations")
        _ = try statement.step()
        attestd.process.terminate()
        let (status, log) = attestd.finish()
        #expect(status == 1)
        #expect(log.contains("closing the database failed"))
        try statement.reset()
        let again = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0"], directory: directory)
        _ = try #require(again.listeningPort())
        again.process.terminate()
        #expect(again.finish().status == 0)
    }

    @Test("creates its database files 0600 whatever the umask, and warns about a gateway secret others can read")
    func fileModes() throws {
        let directory = try temporaryDirectory()
        let secret = directory.appendingPathComponent("gateway.secret")
        try "a-gateway-secret-of-enough-length\n".write(to: secret, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: secret.path)
        let attestd = try AttestdProcess(
            arguments: ["--listen", "127.0.0.1:0", "--gateway-secret-file", secret.path], directory: directory)
        let port = try #require(attestd.listeningPort())
        #expect(try RawHTTPClient(port: port).request("GET", "/readyz").status == 200)
        for name in ["attestd.sqlite", "attestd.sqlite-wal", "attestd.sqlite-shm"] {
            let path = directory.appendingPathComponent(name).path
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(name) is \(String(mode ?? 0, radix: 8))")
        }
        attestd.process.terminate()
        let (_, log) = attestd.finish()
        #expect(log.contains("can be read by other users"))
    }

    @Test("after SIGTERM the database is one complete file: a copy of attestd.sqlite alone holds every integration")
    func coldCopyAfterStop() throws {
        let directory = try temporaryDirectory()
        let attestd = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0"], directory: directory)
        _ = try #require(attestd.listeningPort())
        let database = directory.appendingPathComponent("attestd.sqlite").path
        let tool = Process()
        tool.executableURL = Bundle.main.bundleURL.appendingPathComponent("attestctl")
        tool.arguments = [
            "integration", "create", "--db", database, "--workspace", "ws", "--name", "kept", "--team-id", "ABCDE12345",
            "--bundle-id", "com.example.a",
        ]
        tool.standardOutput = FileHandle.nullDevice
        tool.standardError = FileHandle.nullDevice
        try tool.run()
        tool.waitUntilExit()
        #expect(tool.terminationStatus == 0)
        attestd.process.terminate()
        #expect(attestd.finish().status == 0)
        let wal = (try? FileManager.default.attributesOfItem(atPath: database + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "the -wal file still holds \(wal) bytes")

        let copy = try temporaryDirectory().appendingPathComponent("attestd.sqlite").path
        try FileManager.default.copyItem(atPath: database, toPath: copy)
        let store = try SQLiteTokenStore(existingAt: copy)
        #expect(try store.integrations().map(\.name) == ["kept"])
    }

    @Test("rotates the gateway secret on SIGHUP: old and new both work in between, no request fails during the reload")
    func secretRotation() throws {
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("gateway.secret")
        let old = "old-gateway-secret-0123456789", new = "new-gateway-secret-0123456789"
        func write(_ lines: [String]) throws {
            try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        }
        try write([old])
        let attestd = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0", "--gateway-secret-file", file.path], directory: directory)
        let port = try #require(attestd.listeningPort())
        @Sendable func introspect(_ secret: String) -> Int {
            guard let client = try? RawHTTPClient(port: port),
                let response = try? client.request(
                    "POST", "/v1/introspect",
                    headers: [
                        ("Authorization", "Bearer \(secret)"), ("Content-Type", "application/x-www-form-urlencoded"),
                        ("Connection", "close"),
                    ],
                    body: Array("token=atk_x".utf8))
            else { return 0 }
            return response.status
        }
        #expect(introspect(old) == 200)
        // A load that runs until the test has seen it go on across the reload, one request at a
        // time (at most 5,000: a test that fails midway stops it too).
        let statuses = Mutex<[Int]>([])
        let stopLoad = Atomic<Bool>(false)
        let load = Thread {
            while !stopLoad.load(ordering: .relaxed) && statuses.withLock({ $0.count }) < 5_000 {
                let status = introspect(old)
                statuses.withLock { $0.append(status) }
            }
        }
        load.start()
        #expect(eventually { statuses.withLock { $0.count } >= 10 }, "the load never ran before the reload")
        try write([old, new])
        kill(attestd.process.processIdentifier, SIGHUP)
        #expect(eventually(within: 2) { introspect(new) == 200 })
        let atReload = statuses.withLock { $0.count }
        #expect(eventually { statuses.withLock { $0.count } >= atReload + 20 }, "the load did not go on after the reload")
        stopLoad.store(true, ordering: .relaxed)
        let during = statuses.withLock { $0 }
        #expect(!during.isEmpty && during.allSatisfy { $0 == 200 }, "\(Set(during))")
        try write([new])
        kill(attestd.process.processIdentifier, SIGHUP)
        #expect(eventually(within: 2) { introspect(old) == 401 })
        #expect(introspect(new) == 200)
        try write(["short"])
        kill(attestd.process.processIdentifier, SIGHUP)
        #expect(attestd.logShows("previous ones stay in force", within: 5))
        #expect(introspect(new) == 200)  // a bad file changes nothing
        #expect(attestd.process.isRunning)
        attestd.process.terminate()
        let (status, log) = attestd.finish()
        #expect(status == 0)
        #expect(log.contains("gateway secrets reloaded"))
        #expect(!log.contains(old) && !log.contains(new))
    }
}

@Suite("attestd, a port held by another process")
struct BusyPortTests {
    @Test(
        "a busy device port or a busy admin port exits 75 (EX_TEMPFAIL, which the unit restarts), naming the flag",
        arguments: ["--listen", "--admin-listen"])
    func busyPortIsTransient(flag: String) throws {
        let held = try SilentListener()
        let busy = "127.0.0.1:\(held.port)"
        let arguments =
            flag == "--listen" ? ["--listen", busy, "--admin-listen", "off"] : ["--listen", "127.0.0.1:0", "--admin-listen", busy]
        let attestd = try AttestdProcess(arguments: arguments, directory: try temporaryDirectory())
        let (status, log) = attestd.finish()
        #expect(status == 75, "\(log)")
        #expect(log.contains("cannot listen on \(busy)"))
        #expect(flag == "--listen" || log.contains("(--admin-listen)"))
        withExtendedLifetime(held) {}
    }
}
