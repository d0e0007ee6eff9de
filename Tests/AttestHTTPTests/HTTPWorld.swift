import AttestCore
import AttestCrypto
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

/// Log lines kept in memory so tests can search them.
final class MemorySink: LogSink {
    let lines = Mutex<[String]>([])
    func write(_ line: String) { lines.withLock { $0.append(line) } }
    var all: String { lines.withLock { $0.joined(separator: "\n") } }
}

/// A real attestd with a temporary database, a synthetic trust anchor and a gateway secret, in
/// process (`client()` calls its router without a socket) unless made with `listening: true`
/// (then on 127.0.0.1 port 0, for the tests of what only a socket shows); plus an integration
/// created through the admin use case.
final class HTTPWorld {
    let directory: URL
    let app: Application
    private let listener: Server?
    let sink = MemorySink()

    /// The listening server; only a world made with `listening: true` has one.
    var server: Server {
        guard let listener else { preconditionFailure("this HTTPWorld does not listen: make it with listening: true") }
        return listener
    }
    let pki: SyntheticPKI
    let admin: IntegrationAdmin
    let integration: IntegrationRecord
    let appID: AppID
    let gatewaySecret = "gateway-secret-for-tests-0123456789"
    /// The database: a SQLite file in `directory`, or a PostgreSQL database of its own.
    let location: TestStoreLocation

    init(
        _ backend: StoreBackend = .sqlite, listening: Bool = false, clock: any WallClock = SystemWallClock(),
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestd-http-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        pki = try SyntheticPKI(validAround: Int64(Date().timeIntervalSince1970))
        let anchorFile = directory.appendingPathComponent("anchor.pem")
        try pki.root.pem.write(to: anchorFile, atomically: true, encoding: .utf8)
        let secretFile = directory.appendingPathComponent("gateway.secret")
        try (gatewaySecret + "\n").write(to: secretFile, atomically: true, encoding: .utf8)
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.adminListen = ListenAddress(host: "127.0.0.1", port: 0)
        location = try TestStoreLocation(backend)
        configuration.database = location.location
        configuration.trustAnchorFile = anchorFile.path
        configuration.gatewaySecretFile = secretFile.path
        configuration.perAddress = .unlimited
        // Every test client connects from 127.0.0.1: the race tests hold 50 connections at once.
        configuration.connectionsPerAddress = 0
        configuration.challengePerIntegration = .unlimited
        configure(&configuration)
        if listening {
            let server = try Server(configuration: configuration, version: "test", logger: Logger(sink: sink), clock: clock)
            listener = server
            app = server.application
        } else {
            listener = nil
            app = try Application(configuration: configuration, version: "test", logger: Logger(sink: sink), clock: clock)
        }
        // A second connection to the same database, as attestctl in another process would have.
        admin = IntegrationAdmin(store: try location.open(at: 0, connections: 1))
        integration = try admin.create(
            workspaceID: "ws_http", name: "HTTP test", teamID: "ABCDE12345", bundleIDs: ["com.example.messages"],
            environments: [.production, .development])
        appID = try AppID(teamID: "ABCDE12345", bundleID: "com.example.messages")
    }

    deinit {
        if let listener { listener.stop() } else { app.close() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// The SQLite file of a SQLite world.
    var sqliteFile: URL {
        guard case .sqlite(let path) = location.location else { return directory.appendingPathComponent("not-sqlite") }
        return URL(fileURLWithPath: path)
    }

    /// A client of this attestd: over a socket when the world listens, else through its router.
    func client() throws -> any TestHTTPClient {
        guard let listener else { return RouterClient(router: app.router) }
        return try RawHTTPClient(port: listener.http.port)
    }

    /// A connection to the listening server, for tests that send raw bytes.
    func socketClient() throws -> RawHTTPClient { try RawHTTPClient(port: server.http.port) }

    func json(_ response: RawHTTPResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    /// POST /v1/challenge; returns the challenge text and its raw bytes.
    func challenge(_ client: any TestHTTPClient, clientID: String? = nil) throws -> (text: String, bytes: [UInt8]) {
        let response = try client.postJSON("/v1/challenge", #"{"client_id": "\#(clientID ?? integration.clientID)"}"#)
        #expect(response.status == 200)
        let text = try #require(json(response)["challenge"] as? String)
        return (text, try #require(Base64Text.decode(text, .url)))
    }

    /// The JSON body of a valid /v1/attest request for `device`.
    func attestBody(
        _ client: any TestHTTPClient, device: SyntheticDevice, pki root: SyntheticPKI? = nil,
        mutate: (inout AttestationParts) -> Void = { _ in }
    ) throws -> String {
        let (text, bytes) = try challenge(client)
        var parts = device.attestationParts(
            appID: appID, environment: .production, clientDataHash: Digest.sha256(bytes), time: Int64(Date().timeIntervalSince1970))
        mutate(&parts)
        let object = try device.attestationObject(parts, pki: root ?? pki)
        return
            #"{"client_id":"\#(integration.clientID)","key_id":"\#(Data(device.keyID).base64EncodedString())","attestation":"\#(Data(object).base64EncodedString())","challenge":"\#(text)"}"#
    }

    /// The JSON body of a valid /v1/token request (next counter unless given).
    func refreshBody(_ client: any TestHTTPClient, device: inout SyntheticDevice, counter: UInt32? = nil) throws -> String {
        let (text, bytes) = try challenge(client)
        let object = try device.assertion(clientData: bytes, appID: appID, counter: counter)
        return
            #"{"client_id":"\#(integration.clientID)","key_id":"\#(Data(device.keyID).base64EncodedString())","assertion":"\#(Data(object).base64EncodedString())","challenge":"\#(text)"}"#
    }

    /// Attests `device` and returns its first access token.
    func attest(_ client: any TestHTTPClient, device: SyntheticDevice, pki root: SyntheticPKI? = nil) throws -> String {
        let response = try client.postJSON("/v1/attest", try attestBody(client, device: device, pki: root))
        #expect(response.status == 200, "\(response.text)")
        return try #require(json(response)["access_token"] as? String)
    }

    func authorize(_ client: any TestHTTPClient, token: String) throws -> RawHTTPResponse {
        try client.request("GET", "/v1/authorize", headers: [("Authorization", "Bearer \(token)")])
    }

    func introspect(_ client: any TestHTTPClient, token: String, secret: String? = nil) throws -> RawHTTPResponse {
        try client.request(
            "POST", "/v1/introspect",
            headers: [("Authorization", "Bearer \(secret ?? gatewaySecret)"), ("Content-Type", "application/x-www-form-urlencoded")],
            body: Array("token=\(token)".utf8))
    }
}

/// Runs `body` on `count` threads released together, and collects the results.
func simultaneously<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
    let results = Mutex<[T]>([])
    let start = DispatchSemaphore(value: 0)
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            start.wait()
            let value = body(index)
            results.withLock { $0.append(value) }
            group.leave()
        }
        thread.start()
    }
    for _ in 0..<count { start.signal() }
    group.wait()
    return results.withLock { $0 }
}

/// What the HTTP tests send requests through: attestd's router in process (`RouterClient`) or a
/// socket (`RawHTTPClient`, a listening world's).
protocol TestHTTPClient {
    func request(_ method: String, _ target: String, headers: [(String, String)], body: [UInt8]) throws -> RawHTTPResponse
}

extension TestHTTPClient {
    func request(_ method: String, _ target: String, headers: [(String, String)] = []) throws -> RawHTTPResponse {
        try request(method, target, headers: headers, body: [])
    }

    func postJSON(_ target: String, _ json: String, headers: [(String, String)] = []) throws -> RawHTTPResponse {
        try request("POST", target, headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8))
    }
}

extension RawHTTPClient: TestHTTPClient {}

/// Requests answered by a router in this process, as libmicrohttpd would hand them over from
/// 127.0.0.1: no socket, no port.
struct RouterClient: TestHTTPClient {
    let router: Router

    func request(_ method: String, _ target: String, headers: [(String, String)], body: [UInt8]) -> RawHTTPResponse {
        var fields = headers.map { HTTPHeader(name: $0.0, value: $0.1) }
        if !fields.contains(where: { $0.name.lowercased() == "host" }) { fields.append(HTTPHeader(name: "Host", value: "127.0.0.1")) }
        let response = router.respond(
            to: HTTPRequest(method: method, target: target, headers: fields, body: body, remoteAddress: "127.0.0.1"))
        return RawHTTPResponse(status: response.status, headers: response.headers.map { ($0.name, $0.value) }, body: response.body)
    }
}
