import AttestClientSimulator
import AttestHTTP
import AttestHTTPServer
import AttestObservability
import AttestServer
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

@testable import AttestClient

/// The app's clock, moved by hand.
final class TestClock: Sendable {
    private let current = Mutex(Date())

    var now: Date { current.withLock { $0 } }

    /// Moves the clock on by `seconds`.
    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }

    /// The clock as `AttestClient.Configuration` takes it.
    var function: @Sendable () -> Date { { self.now } }
}

/// A real attestd with a fresh database, trusting the root of a simulator state directory, and an
/// integration for the simulated app. In process by default: the clients' requests reach its
/// router without a socket (`RouterTransport`) and their pauses take no real time
/// (`ManualClock`). With `network`, it listens on 127.0.0.1 (port 0 at first, the same port
/// after a restart) for clients over URLSession and other processes. It counts the requests it
/// served by route and status (from `/metrics`, added up over restarts), so tests can say how many
/// attestations and refreshes a client made.
final class ClientWorld: Sendable {
    static let teamID = "ABCDE12345"
    static let bundleID = "com.example.messages"

    let directory: URL
    /// The simulator's state directory: its PKI (whose root attestd trusts) and device keys.
    let stateDirectory: URL
    let location: TestStoreLocation
    let admin: IntegrationAdmin
    let integration: IntegrationRecord
    let clock = TestClock()
    /// The clients' monotonic clock (in process); attestd's wall clock follows it.
    let uptime: ManualClock
    /// The listening port (`network` only; 0 otherwise).
    let port: UInt16
    private let configuration: ServerConfiguration
    private let server: Mutex<Running?>
    /// attestd's wall clock: following `uptime` in process, the system's on the network.
    private let serverClock: any WallClock
    /// When attestd comes back by itself (`comesBack(after:)`).
    private let restartAt = Mutex<TimeInterval?>(nil)
    /// Where requests to a silent attestd wait (`untilWaiting`: for a test to know they do).
    let silence = ManualClock(autoAdvance: false)
    /// Whether a stopped attestd accepts connections and never answers (in process only).
    let silent = Atomic<Bool>(false)
    /// Requests counted by servers since stopped, by `route="..",status=".."`.
    private let earlierCounts = Mutex<[String: Int]>([:])
    private let logs = LogLines()

    /// attestd as it runs: listening, or only its application (in process).
    private enum Running {
        case network(Server)
        case inProcess(Application)

        var router: Router {
            switch self {
            case .network(let server): server.router
            case .inProcess(let application): application.router
            }
        }

        func stop() {
            switch self {
            case .network(let server): server.stop()
            case .inProcess(let application): application.close()
            }
        }
    }

    init(
        _ backend: StoreBackend = .sqlite, network: Bool = false, autoAdvance: Bool = true, stateDirectory given: URL? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) throws {
        uptime = ManualClock(autoAdvance: autoAdvance)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attest-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        stateDirectory = given ?? directory.appendingPathComponent("simulator")
        // The simulator makes its PKI on first use, as `attestctl simulate --state DIR` does.
        _ = try SimulatedAppAttestDevice(stateDirectory: stateDirectory, teamID: Self.teamID, bundleID: Self.bundleID)
        let anchor = directory.appendingPathComponent("root.pem")
        try SimulatorState(directory: stateDirectory.path).read().root.pem.write(to: anchor, atomically: true, encoding: .utf8)
        location = try TestStoreLocation(backend)
        var configuration = ServerConfiguration()
        configuration.port = 0
        // No admin listener: its default port would collide between tests running at once.
        configuration.adminListen = nil
        configuration.threads = 2
        configuration.database = location.location
        configuration.trustAnchorFile = anchor.path
        configuration.perAddress = .unlimited
        configuration.connectionsPerAddress = 0
        configuration.challengePerIntegration = .unlimited
        configure(&configuration)
        serverClock = network ? SystemWallClock() : FollowingUptime(uptime: uptime)
        let first = try Self.start(configuration, network: network, clock: serverClock, logs)
        if case .network(let listening) = first {
            port = listening.http.port
        } else {
            port = 0
        }
        configuration.port = port
        self.configuration = configuration
        server = Mutex(first)
        admin = IntegrationAdmin(store: try location.open(at: 0, connections: 1))
        integration = try admin.create(
            workspaceID: "ws_client", name: "Client tests", teamID: Self.teamID, bundleIDs: [Self.bundleID],
            environments: [.production, .development])
    }

    deinit {
        _ = server.withLock { $0?.stop() }
        try? FileManager.default.removeItem(at: directory)
    }

    private static func start(_ configuration: ServerConfiguration, network: Bool, clock: any WallClock, _ logs: LogLines) throws -> Running
    {
        let logger = Logger(sink: ClosureSink { line in logs.append(line) })
        guard network else {
            return .inProcess(try Application(configuration: configuration, version: "test", logger: logger, clock: clock))
        }
        return .network(try Server(configuration: configuration, version: "test", logger: logger, clock: clock))
    }

    /// attestd's answer to `request`, through its router (no socket); 503 while it is stopped.
    func respond(_ method: String, _ target: String, json: String? = nil, bearer: String? = nil) -> HTTPResponse {
        guard let router = server.withLock({ $0?.router }) else { return HTTPResponse(status: 503) }
        var headers = json == nil ? [] : [HTTPHeader(name: "Content-Type", value: "application/json")]
        if let bearer { headers.append(HTTPHeader(name: "Authorization", value: "Bearer \(bearer)")) }
        return router.respond(
            to: HTTPRequest(method: method, target: target, headers: headers, body: Array((json ?? "").utf8), remoteAddress: "127.0.0.1"))
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)") ?? URL(fileURLWithPath: "/") }

    /// attestd's log so far.
    var log: String { logs.text }

    /// The SQLite file of a SQLite world.
    var sqliteFile: URL {
        guard case .sqlite(let path) = location.location else { return directory.appendingPathComponent("not-sqlite") }
        return URL(fileURLWithPath: path)
    }

    /// attestd's time now (its own clock, which runs ahead of the real time in process).
    var serverDate: Date { Date(timeIntervalSince1970: TimeInterval(serverClock.now())) }

    /// Freezes attestd's clock at `date`, or returns it to the system clock (nil); test mode only.
    func setServerClock(_ date: Date?) throws {
        let now = date.map { String(Int64($0.timeIntervalSince1970)) } ?? "0"
        let response = respond("POST", "/test/clock", json: #"{"now": "\#(now)"}"#)
        guard response.status == 200 else { throw TestFailure(description: "POST /test/clock: \(response.status)") }
    }

    /// Stops attestd (connections are refused until `start`), keeping its counts.
    func stop() throws {
        let counts = try currentCounts()
        earlierCounts.withLock { earlier in earlier.merge(counts, uniquingKeysWith: +) }
        server.withLock { server in
            server?.stop()
            server = nil
        }
    }

    /// Starts attestd again on the same port and database.
    func start() throws {
        let started = try Self.start(configuration, network: port != 0, clock: serverClock, logs)
        server.withLock { $0 = started }
    }

    /// In process: attestd starts again once the clients' clock has moved `seconds` on.
    func comesBack(after seconds: TimeInterval) {
        restartAt.withLock { $0 = uptime.now() + seconds }
    }

    /// Requests served on `route` (the metrics' route label: challenge, attest, token, ...),
    /// with `status` or with any status.
    func requests(_ route: String, status: Int? = nil) throws -> Int {
        let counts = try currentCounts().merging(earlierCounts.withLock { $0 }, uniquingKeysWith: +)
        return counts.filter { key, _ in
            key.hasPrefix("route=\"\(route)\",") && (status.map { key.hasSuffix(",status=\"\($0)\"") } ?? true)
        }.values.reduce(0, +)
    }

    /// Requests served on every route but /metrics itself.
    func allRequests() throws -> Int {
        let counts = try currentCounts().merging(earlierCounts.withLock { $0 }, uniquingKeysWith: +)
        return counts.filter { !$0.key.hasPrefix("route=\"metrics\"") }.values.reduce(0, +)
    }

    private func currentCounts() throws -> [String: Int] {
        guard server.withLock({ $0 != nil }) else { return [:] }
        let text = String(decoding: respond("GET", "/metrics").body, as: UTF8.self)
        var counts: [String: Int] = [:]
        let prefix = "attestd_http_requests_total{"
        for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
            guard let close = line.lastIndex(of: "}"),
                let value = Double(line[line.index(after: close)...].trimmingCharacters(in: .whitespaces))
            else { continue }
            counts[String(line[line.index(line.startIndex, offsetBy: prefix.count)..<close]), default: 0] += Int(value)
        }
        return counts
    }

    /// The simulated device of the app, on this world's state directory.
    func device(reattestation: SimulatedAppAttestDevice.Reattestation = .refused) throws -> SimulatedAppAttestDevice {
        try SimulatedAppAttestDevice(
            stateDirectory: stateDirectory, teamID: Self.teamID, bundleID: Self.bundleID, reattestation: reattestation)
    }

    /// A key ID file in this world's directory.
    func keyStore(_ name: String = "key-id") -> FileKeyIDStore {
        FileKeyIDStore(url: directory.appendingPathComponent("app/\(name)"))
    }

    /// A client of this attestd with the world's clocks: in process unless the world listens on
    /// the network (then over URLSession, on the system's monotonic clock).
    func client(
        device: (any AppAttestDevice)?, keyStore: (any KeyIDStore)?, clientID: String? = nil, retryBudget: TimeInterval = 30,
        debugToken: String? = nil
    ) -> AttestClient {
        client(
            configuration: AttestClient.Configuration(
                baseURL: baseURL, clientID: clientID ?? integration.clientID, clock: clock.function, retryBudget: retryBudget,
                apiHosts: ["127.0.0.1"]),
            device: device, keyStore: keyStore, debugToken: debugToken)
    }

    /// A client of `configuration`, as `client(device:keyStore:...)` makes one.
    func client(
        configuration: AttestClient.Configuration, device: (any AppAttestDevice)? = nil, keyStore: (any KeyIDStore)? = nil,
        debugToken: String? = nil
    ) -> AttestClient {
        guard port == 0 else {
            if let debugToken { return AttestClient(configuration: configuration, debugToken: debugToken) }
            return AttestClient(configuration: configuration, device: device ?? NoAppAttest(), keyStore: keyStore ?? NoAppAttest())
        }
        return AttestClient(
            configuration: configuration, device: device, keyStore: keyStore, debugToken: debugToken, transport: transport, clock: uptime)
    }

    /// The answers the in-process transport loses.
    private let losses = LostAnswers()

    /// The in-process transport loses attestd's next answer to `path` (attestd did the work).
    func transportLoses(_ path: String) { losses.arm(path) }

    /// Answers lost so far.
    var lostAnswers: Int { losses.count }

    /// The in-process transport answers the next request to `path` with `status` and attestd's
    /// problem `code`, with `Retry-After`, in attestd's place.
    func transportRefuses(_ path: String, status: Int, code: String, retryAfter: Int) {
        losses.refuse(LostAnswers.Refusal(path: path, status: status, code: code, retryAfter: retryAfter))
    }

    /// Refusals the in-process transport gave for `path`.
    func refusals(_ path: String) -> Int { losses.refused.withLock { $0[path, default: 0] } }

    /// The in-process way to this attestd, down while it is stopped.
    var transport: RouterTransport {
        RouterTransport(losing: losses, silence: silence) { [self] in
            if let at = restartAt.withLock({ $0 }), uptime.now() >= at {
                restartAt.withLock { $0 = nil }
                try? start()
            }
            if let router = server.withLock({ $0?.router }) { return .router(router) }
            return silent.load(ordering: .relaxed) ? .silent : .down
        }
    }

    /// The number of keys the simulated app holds in the state directory.
    func deviceKeys() throws -> Int {
        let keys = stateDirectory.appendingPathComponent("devices/\(Self.teamID).\(Self.bundleID)")
        guard FileManager.default.fileExists(atPath: keys.path) else { return 0 }
        return try FileManager.default.contentsOfDirectory(atPath: keys.path).filter { $0.hasSuffix(".pem") }.count
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
}

/// attestd's log lines, kept in memory.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}

/// A device that runs `hook` (with the call's name and number, from 1) before each call of
/// `inner`, for tests that act between the client's steps.
struct HookedDevice: AppAttestDevice {
    let inner: any AppAttestDevice
    let hook: @Sendable (String, Int) async throws -> Void
    /// How many times each call was made.
    let calls = Counter()

    init(_ inner: any AppAttestDevice, hook: @escaping @Sendable (String, Int) async throws -> Void) {
        self.inner = inner
        self.hook = hook
    }

    var isSupported: Bool { inner.isSupported }

    func generateKey() async throws -> String {
        try await hook("generateKey", calls.next("generateKey"))
        return try await inner.generateKey()
    }

    func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data {
        try await hook("attestKey", calls.next("attestKey"))
        return try await inner.attestKey(keyID, clientDataHash: clientDataHash)
    }

    func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data {
        try await hook("generateAssertion", calls.next("generateAssertion"))
        return try await inner.generateAssertion(keyID, clientDataHash: clientDataHash)
    }
}

/// Counts by name.
final class Counter: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    func next(_ name: String) -> Int {
        counts.withLock { counts in
            counts[name, default: 0] += 1
            return counts[name, default: 0]
        }
    }

    func count(_ name: String) -> Int { counts.withLock { $0[name, default: 0] } }
}

/// attestd's wall clock in process: it moves on only with the clients' manual clock, so a
/// client's pause for `Retry-After` refills attestd's limits and real time refills nothing (the
/// tests' rates are exact however slow the machine). It starts an hour ahead of the real time:
/// the simulated device dates its certificates by the real time, valid from a minute before
/// it, so attestd's time must not fall behind the real one while the world lives.
struct FollowingUptime: WallClock {
    let uptime: ManualClock
    private let start = Int64(Date().timeIntervalSince1970) + 3600
    private let origin: TimeInterval

    init(uptime: ManualClock) {
        self.uptime = uptime
        origin = uptime.now()
    }

    func now() -> Int64 { start + Int64((uptime.now() - origin).rounded(.down)) }
}
