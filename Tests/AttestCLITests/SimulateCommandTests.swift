import AttestCLI
import AttestCrypto
import AttestObservability
import AttestServer
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

/// Drops the server's log lines.
private struct SilentSink: LogSink {
    func write(_ line: String) {}
}

/// A real attestd on 127.0.0.1 port 0 that trusts the root `simulate --write-trust-anchor` wrote
/// from a fresh state directory, with an integration for the simulated app.
private final class SimulatorWorld {
    let directory: URL
    let state: String
    let anchor: String
    let database: String
    let server: Server
    let integration: IntegrationRecord

    init(configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestctl-simulate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        state = directory.appendingPathComponent("state").path
        anchor = directory.appendingPathComponent("anchor.pem").path
        database = directory.appendingPathComponent("attestd.sqlite").path
        let console = SimulatorWorld.console()
        #expect(console.run(["simulate", "--write-trust-anchor", anchor, "--state", state]) == 0)
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.adminListen = nil
        configuration.database = .sqlite(path: database)
        configuration.trustAnchorFile = anchor
        configure(&configuration)
        server = try Server(configuration: configuration, version: "test", logger: Logger(sink: SilentSink()))
        let admin = IntegrationAdmin(store: try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0))
        integration = try admin.create(
            workspaceID: "ws_sim", name: "Simulator", teamID: "ABCDE12345", bundleIDs: ["com.example.sim"], environments: [.production])
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A console on the real clock: the server checks the credential certificates against its own.
    static func console() -> Console { Console(now: Int64(Date().timeIntervalSince1970)) }

    func simulate(clientID: String? = nil, devices: Int, refreshes: Int, extra: [String] = []) -> (code: Int32, console: Console) {
        let console = Self.console()
        let code = console.run(
            [
                "simulate", "--url", "http://127.0.0.1:\(server.http.port)", "--client-id", clientID ?? integration.clientID, "--team-id",
                "ABCDE12345", "--bundle-id", "com.example.sim", "--devices", String(devices), "--refreshes", String(refreshes), "--state",
                state,
            ] + extra)
        return (code, console)
    }
}

/// The `ok` and `failed` columns of one step's row in the report.
private struct StepCounts: Equatable, CustomStringConvertible {
    let ok: Int
    let failed: Int
    var description: String { "\(ok) ok, \(failed) failed" }

    init(ok: Int, failed: Int) {
        self.ok = ok
        self.failed = failed
    }

    init?(_ step: String, in output: String) {
        for line in output.split(separator: "\n") {
            let cells = line.split(separator: " ")
            if cells.first.map(String.init) == step, cells.count >= 3, let ok = Int(cells[1]), let failed = Int(cells[2]) {
                self.init(ok: ok, failed: failed)
                return
            }
        }
        return nil
    }
}

@Suite("attestctl simulate")
struct SimulateCommandTests {
    @Test("5 devices with 3 refreshes each all succeed against a server that trusts the simulator's root")
    func fullRun() throws {
        let world = try SimulatorWorld()
        let (code, console) = world.simulate(devices: 5, refreshes: 3)
        let output = console.out.withLock { $0 }
        #expect(code == 0, "\(output)\(console.err.withLock { $0 })")
        #expect(StepCounts("challenge", in: output) == StepCounts(ok: 20, failed: 0))
        #expect(StepCounts("attest", in: output) == StepCounts(ok: 5, failed: 0))
        #expect(StepCounts("refresh", in: output) == StepCounts(ok: 15, failed: 0))
        #expect(StepCounts("authorize", in: output) == StepCounts(ok: 20, failed: 0))
        #expect(output.contains("5 of 5 devices succeeded at every step"))
        #expect(output.contains("p99 ms") && !output.contains("failures:"))
        #expect(try world.server.store.statistics().activeDevices == 5)
    }

    @Test("development devices are accepted only by an integration that allows development")
    func environment() throws {
        let world = try SimulatorWorld()
        let (code, console) = world.simulate(devices: 2, refreshes: 0, extra: ["--environment", "development"])
        #expect(code == 1)
        #expect(console.out.withLock { $0.contains("reason=environment_not_allowed") })
    }

    @Test("an unknown client ID fails the run with exit 1 and prints the problem code")
    func unknownClient() throws {
        let world = try SimulatorWorld()
        let (code, console) = world.simulate(clientID: "clid_" + String(repeating: "0", count: 32), devices: 3, refreshes: 2)
        let output = console.out.withLock { $0 }
        #expect(code == 1)
        #expect(StepCounts("challenge", in: output) == StepCounts(ok: 0, failed: 3))
        #expect(StepCounts("attest", in: output) == StepCounts(ok: 0, failed: 0))
        #expect(output.contains("challenge: 3 x HTTP 404 code=integration_not_found reason=integration_not_found"))
        #expect(output.contains("0 of 3 devices succeeded at every step"))
        #expect(try world.server.store.statistics().activeDevices == 0)
    }

    @Test("a server down is a failure per device, not a hang")
    func serverDown() throws {
        let console = SimulatorWorld.console()
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("attestctl-simulate-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        // Port 1 on loopback: nothing listens there.
        let code = console.run(
            [
                "simulate", "--url", "http://127.0.0.1:1", "--client-id", "clid_0123456789abcdef0123456789abcdef", "--team-id",
                "ABCDE12345", "--bundle-id", "a.b",
                "--devices", "2", "--state", state,
            ])
        #expect(code == 1)
        #expect(console.out.withLock { $0.contains("code=transport") && $0.contains("hint: is attestd listening") })
    }

    @Test("a connection over attestd's per-address cap is reported as its 503 with a hint naming the cap")
    func overConnectionCap() throws {
        let world = try SimulatorWorld { $0.connectionsPerAddress = 1 }
        // This connection holds the address's one share, so the simulator's are over the cap.
        let held = try RawHTTPClient(port: world.server.http.port)
        try held.send("GET /healthz HTTP/1.1\r\nHost: x\r\n")
        let (code, console) = world.simulate(devices: 1, refreshes: 0, extra: ["--concurrency", "1"])
        let output = console.out.withLock { $0 }
        #expect(code == 1)
        #expect(output.contains("challenge: 1 x HTTP 503 code=too_many_connections reason=connections_per_address"))
        #expect(output.contains("hint: attestd refused connections over its cap per client address (--connections-per-address"))
        #expect(!output.contains("hint: is attestd listening"))
    }

    @Test(
        "refuses a bad command line with exit 64 and the usage",
        arguments: [
            ["--url", "https://127.0.0.1:8080"], ["--url", "http://localhost:8080"], ["--url", "http://127.0.0.1"],
            ["--url", "http://127.0.0.1:8080/v1"], ["--url", "http://127.0.0.1:0"], ["--url", "http://127.0.0.1:+80"],
            ["--url", "http://::1:8080"], ["--url", "http://10.0.0.256:80"], ["--devices", "0"], ["--devices", "five"],
            ["--refreshes", "-1"], ["--concurrency", "65"], ["--environment", "staging"], ["--team-id", "abcde12345"],
            ["--client-id", ""], ["--write-trust-anchor", "anchor.pem"], ["--bogus", "1"],
        ])
    func usage(_ change: [String]) {
        var options = [
            "--url": "http://127.0.0.1:8080", "--client-id": "clid_0123456789abcdef0123456789abcdef", "--team-id": "ABCDE12345",
            "--bundle-id": "com.example.sim",
            "--devices": "5",
        ]
        options[change[0]] = change[1]
        let console = SimulatorWorld.console()
        #expect(console.run(["simulate"] + options.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }) == 64)
        #expect(console.err.withLock { $0.contains("usage: attestctl simulate") })
        #expect(console.out.withLock { $0.isEmpty })
    }

    @Test("refuses a run without --client-id; help lists both modes")
    func missingOption() {
        let console = SimulatorWorld.console()
        let arguments = ["simulate", "--url", "http://127.0.0.1:8080", "--team-id", "ABCDE12345", "--bundle-id", "a.b", "--devices", "1"]
        #expect(console.run(arguments) == 64)
        #expect(console.err.withLock { $0.contains("missing --client-id") })
        let help = SimulatorWorld.console()
        #expect(help.run(["help", "simulate"]) == 0)
        #expect(help.out.withLock { $0.contains("--write-trust-anchor FILE") && $0.contains("--devices N") })
    }

    @Test("accepts an IPv6 literal URL (nothing listens there: exit 1, not 64)")
    func ipv6() {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("attestctl-simulate-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let console = SimulatorWorld.console()
        let code = console.run(
            [
                "simulate", "--url", "http://[::1]:1/", "--client-id", "clid_0123456789abcdef0123456789abcdef", "--team-id", "ABCDE12345",
                "--bundle-id", "a.b",
                "--devices", "1", "--state", state,
            ])
        #expect(code == 1)
        #expect(console.out.withLock { $0.contains("against http://[::1]:1 ") && $0.contains("code=transport") })
    }

    @Test("keeps its PKI in the state directory: the same root on every run, a new one after the root expired")
    func stateReuse() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestctl-simulate-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = directory.appendingPathComponent("state").path
        func anchor(_ name: String, state: String) throws -> String {
            let file = directory.appendingPathComponent(name).path
            let console = SimulatorWorld.console()
            #expect(console.run(["simulate", "--write-trust-anchor", file, "--state", state]) == 0)
            #expect(console.out.withLock { $0.contains("--trust-anchor \(file)") })
            return try String(contentsOfFile: file, encoding: .utf8)
        }
        let first = try anchor("first.pem", state: state)
        #expect(first.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(try anchor("second.pem", state: state) == first)
        let keyAttributes = try FileManager.default.attributesOfItem(atPath: state + "/root-key.pem")
        #expect((keyAttributes[.posixPermissions] as? Int) == 0o600)
        #expect(try anchor("other.pem", state: directory.appendingPathComponent("other").path) != first)

        // A root that expired ten years ago is replaced, and the run says attestd needs the new one.
        let old = try SyntheticPKI(validAround: Int64(Date().timeIntervalSince1970) - 30 * 365 * 86_400)
        try old.root.pem.write(toFile: state + "/root.pem", atomically: true, encoding: .utf8)
        try old.rootKey.pem.write(toFile: state + "/root-key.pem", atomically: true, encoding: .utf8)
        let console = SimulatorWorld.console()
        let file = directory.appendingPathComponent("renewed.pem").path
        #expect(console.run(["simulate", "--write-trust-anchor", file, "--state", state]) == 0)
        #expect(console.err.withLock { $0.contains("was not valid now") })
        let renewed = try String(contentsOfFile: file, encoding: .utf8)
        #expect(renewed != first && renewed != old.root.pem)
        #expect(try anchor("after.pem", state: state) == renewed)
    }

    @Test("a root attestd does not trust fails every attestation with chain_invalid and a hint")
    func untrustedRoot() throws {
        let world = try SimulatorWorld()
        let console = SimulatorWorld.console()
        let other = world.directory.appendingPathComponent("other-state").path
        let code = console.run(
            [
                "simulate", "--url", "http://127.0.0.1:\(world.server.http.port)", "--client-id", world.integration.clientID, "--team-id",
                "ABCDE12345", "--bundle-id", "com.example.sim", "--devices", "2", "--state", other,
            ])
        #expect(code == 1)
        #expect(console.out.withLock { $0.contains("reason=chain_invalid") && $0.contains("--write-trust-anchor FILE") })
    }
}
