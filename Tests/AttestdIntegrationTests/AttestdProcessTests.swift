import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// The real `attestd` binary (`swift test` builds the executables beside the test bundle).
final class AttestdProcess {
    static let binary = Bundle.main.bundleURL.appendingPathComponent("attestd")
    let process = Process()
    let errors = Pipe()
    let directory: URL
    /// What `listeningPort` read of stderr, kept so that `finish` returns the whole log.
    private var consumed = ""

    init(arguments: [String], directory: URL) throws {
        self.directory = directory
        process.executableURL = Self.binary
        // The admin listener on a free port too: its default (8081) would collide between tests.
        // (Only beside --listen: `attestd --version` must stay alone.)
        let serves = arguments.contains("--listen") && !arguments.contains("--admin-listen")
        process.arguments = serves ? arguments + ["--admin-listen", "127.0.0.1:0"] : arguments
        process.currentDirectoryURL = directory
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
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
        let log = consumed + String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationStatus, log)
    }

    /// Whether the log shows `text` within `seconds` (reads stderr while it waits).
    func logShows(_ text: String, within seconds: Double) -> Bool {
        let handle = errors.fileHandleForReading
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while !consumed.contains(text) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            var descriptor = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000) + 1) > 0
            else { continue }
            let chunk = handle.availableData
            if chunk.isEmpty { return false }
            consumed += String(decoding: chunk, as: UTF8.self)
        }
        return true
    }

    /// The port from the "listening" log line (reads stderr until it appears).
    func listeningPort() -> UInt16? {
        let handle = errors.fileHandleForReading
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            consumed += String(decoding: chunk, as: UTF8.self)
            if let range = consumed.range(of: #""listen.port":"#) {
                return UInt16(consumed[range.upperBound...].prefix { $0.isNumber })
            }
        }
        return nil
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
        let attestd = try AttestdProcess(arguments: ["--listen", "127.0.0.1:0"], directory: directory)
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
        usleep(2_500_000)  // two purge ticks
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
        let statuses = Mutex<[Int]>([])
        let load = Thread {
            let end = ContinuousClock.now + .seconds(2)
            while ContinuousClock.now < end {
                let status = introspect(old)
                statuses.withLock { $0.append(status) }
                // Paced: attestd's log lines go to a pipe this test reads only at the end (64 KiB).
                usleep(20_000)  // paced, so the log pipe read at the end does not fill
            }
        }
        load.start()
        usleep(300_000)  // real time: the load runs against attestd as a process before the reload
        try write([old, new])
        kill(attestd.process.processIdentifier, SIGHUP)
        #expect(eventually(within: 2) { introspect(new) == 200 })
        usleep(2_000_000)  // real time: the load goes on across the reload
        let during = statuses.withLock { $0 }
        #expect(!during.isEmpty && during.allSatisfy { $0 == 200 }, "\(Set(during))")
        try write([new])
        kill(attestd.process.processIdentifier, SIGHUP)
        #expect(eventually(within: 2) { introspect(old) == 401 })
        #expect(introspect(new) == 200)
        try write(["short"])
        kill(attestd.process.processIdentifier, SIGHUP)
        usleep(300_000)  // real time: a process's signal handler has no event to wait for
        #expect(introspect(new) == 200)  // a bad file changes nothing
        #expect(attestd.process.isRunning)
        attestd.process.terminate()
        let (status, log) = attestd.finish()
        #expect(status == 0)
        #expect(log.contains("gateway secrets reloaded") && log.contains("previous ones stay in force"))
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
