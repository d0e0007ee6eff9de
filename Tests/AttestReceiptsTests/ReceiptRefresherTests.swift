import AttestAppleClient
import AttestCore
import AttestCrypto
import AttestHTTPServer
import AttestObservability
import AttestReceipts
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// One integration with a DeviceCheck key, one development device whose ATTEST receipt is two days
/// old, a fake Apple on loopback, and a refresher pointed at it (`--apple-receipt-url`).
final class RefreshWorld: Sendable {
    static let start: Int64 = 1_800_000_000
    static let clientID = "clid_0123456789abcdef0123456789abcdef"
    static let teamID = "ABCDE12345"
    static let appID = "ABCDE12345.com.example.app"
    static let fraudKeyID = "KEY1234567"
    let clock = SettableWallClock(RefreshWorld.start)
    let location: TestStoreLocation
    let store: any TokenStore
    let receipts: SyntheticReceipts
    let deviceCheckKey: PrivateKey
    let secretsKey: [UInt8]
    let fake: FakeApple
    let server: HTTPServer
    let device: DeviceRecord
    let lines = LogLines()

    init(answer: HTTPResponse) throws {
        location = try TestStoreLocation(.sqlite)
        store = try TokenStores.open(location.location, connections: 2, busyTimeout: .seconds(2), migrateAt: Self.start)
        receipts = try SyntheticReceipts(time: Self.start)
        deviceCheckKey = try PrivateKey.generate(.p256)
        secretsKey = try SecureRandom.bytes(32)
        let created = Self.start - 2 * 86_400
        device = DeviceRecord(
            keyID: [UInt8](repeating: 7, count: 32), clientID: Self.clientID, publicKey: [0x04] + [UInt8](repeating: 1, count: 64),
            counter: 1, environment: .development,
            receipt: try receipts.receipt(appID: Self.appID, created: created, risk: 0, type: "ATTEST"),
            status: .active, createdAt: created, updatedAt: created, appID: Self.appID,
            receiptState: ReceiptState(
                verdict: .valid, type: .attest, createdAt: created, expiresAt: created + 90 * 86_400, riskMetric: nil, refreshedAt: nil),
            credentialSHA256: Digest.sha256(receipts.credentialCertificate))
        try store.restore(
            StoreSnapshot(
                integrations: [
                    IntegrationRecord(
                        clientID: Self.clientID, workspaceID: "w1", name: "Example", teamID: Self.teamID, bundleIDs: ["com.example.app"],
                        environments: [.development, .production], status: .active, createdAt: created, revokedAt: nil)
                ], devices: [device], tokens: []))
        let pem = try deviceCheckKey.pem
        let sealed = try SealedBox.seal(
            Array(pem.utf8), key: secretsKey,
            associatedData: FraudKeySealing.associatedData(clientID: Self.clientID, keyID: Self.fraudKeyID))
        _ = try store.setFraudKey(clientID: Self.clientID, keyID: Self.fraudKeyID, sealedKey: sealed, at: Self.start, audit: nil)
        let clock = clock
        fake = FakeApple(
            expectation: FakeApple.Expectation(
                publicKey: try deviceCheckKey.publicKey, keyID: Self.fraudKeyID, teamID: Self.teamID, now: { clock.now() }),
            answer: answer)
        server = try HTTPServer(configuration: HTTPServer.Configuration(host: "127.0.0.1", port: 0, threads: 1), responder: fake)
    }

    deinit { server.stop() }

    var baseURL: String { "http://127.0.0.1:\(server.port)" }

    func refresher(secretsKey: [UInt8]? = nil, baseURL: String? = nil) throws -> ReceiptRefresher {
        let lines = lines
        return ReceiptRefresher(
            store: store,
            apple: AppleAttestationDataClient(
                client: try HTTPSClient(connectTimeoutMilliseconds: 2_000, totalTimeoutMilliseconds: 5_000),
                overrideBaseURL: baseURL ?? self.baseURL),
            verifier: receipts.verifier, secretsKey: secretsKey ?? self.secretsKey, clock: clock,
            logger: Logger(sink: ClosureSink { line in lines.append(line) }, minimumLevel: .debug))
    }

    var stored: DeviceRecord? { try? store.device(keyID: device.keyID) }
    var log: String { lines.text }

    /// Nothing secret in the logs: no JWT (its header starts `eyJ`), no PEM, no key bytes.
    func expectNoSecretsLogged(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let pem = try deviceCheckKey.pem
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        #expect(!log.contains("eyJ"), sourceLocation: sourceLocation)
        #expect(!log.contains(String(body.prefix(24))), sourceLocation: sourceLocation)
        #expect(!log.contains(Hex.encode(secretsKey)), sourceLocation: sourceLocation)
    }
}

/// Log lines collected in memory.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}

@Suite("Receipt refresher against a fake Apple")
struct ReceiptRefresherTests {
    @Test("200 with a receipt naming another credential certificate: refused and not stored (decision 0021: receipts are bound to the key)")
    func anotherDevicesReceipt() throws {
        let world = try RefreshWorld(answer: HTTPResponse(status: 200))
        let foreign = try world.receipts.receipt(
            appID: RefreshWorld.appID, created: RefreshWorld.start - 60, risk: 1, certificate: world.receipts.pki.signer.derBytes)
        world.fake.answer(with: HTTPResponse(status: 200, body: Array(Base64Text.encode(foreign).utf8)))
        #expect(try world.refresher().runPass() == [.invalidReceipt: 1])
        #expect(world.stored?.receipt == world.device.receipt)
        #expect(world.stored?.receiptState == world.device.receiptState)
        #expect(world.log.contains("receipt_certificate"))
    }

    @Test("a device without a recorded credential certificate, or whose receipt did not verify, is never sent to Apple")
    func unboundDevicesAreNotCandidates() throws {
        let world = try RefreshWorld(answer: HTTPResponse(status: 200))
        // A second device like the first, but attested before attestd recorded credential certificates.
        var unbound = world.device
        unbound.keyID = [UInt8](repeating: 8, count: 32)
        unbound.credentialSHA256 = nil
        let challenge = [UInt8](repeating: 9, count: 32)
        #expect(
            try world.store.insertChallenge(
                id: challenge, clientID: RefreshWorld.clientID, createdAt: RefreshWorld.start, expiresAt: RefreshWorld.start + 300))
        let token = TokenRecord(
            tokenHash: [UInt8](repeating: 5, count: 32), clientID: RefreshWorld.clientID, workspaceID: "w1", keyID: unbound.keyID,
            scope: "messages", issuedAt: RefreshWorld.start, expiresAt: RefreshWorld.start + 3600)
        #expect(
            try world.store.registerDevice(unbound, firstToken: token, consumingChallenge: challenge, at: RefreshWorld.start) == .registered
        )
        #expect(try world.store.receiptRefreshCandidates(dueBefore: RefreshWorld.start, limit: 10).map(\.keyID) == [world.device.keyID])
        var refused = world.device.receiptState
        refused?.verdict = .refused(check: "receipt_certificate")
        try world.store.updateReceipt(keyID: world.device.keyID, receipt: world.device.receipt, state: try #require(refused))
        #expect(try world.store.receiptRefreshCandidates(dueBefore: RefreshWorld.start, limit: 10).isEmpty)
        #expect(try world.refresher().runPass() == [:])
        #expect(world.fake.requests.isEmpty)
    }

    @Test("200: the new RECEIPT receipt is verified and stored with its risk metric; the JWT is what Apple expects")
    func refreshed() throws {
        let world = try RefreshWorld(answer: HTTPResponse(status: 200))
        let fresh = try world.receipts.receipt(appID: RefreshWorld.appID, created: RefreshWorld.start - 60, risk: 7)
        world.fake.answer(with: HTTPResponse(status: 200, body: Array(Base64Text.encode(fresh).utf8)))
        let refresher = try world.refresher()
        #expect(refresher.runPass() == [.refreshed: 1])
        let requests = world.fake.requests
        #expect(requests.count == 1)
        #expect(requests.first?.jwtProblems == [])
        #expect(requests.first?.body == world.device.receipt)
        let stored = try #require(world.stored)
        #expect(stored.receipt == fresh)
        #expect(
            stored.receiptState
                == ReceiptState(
                    verdict: .valid, type: .receipt, createdAt: RefreshWorld.start - 60, expiresAt: RefreshWorld.start - 60 + 90 * 86_400,
                    riskMetric: 7, refreshedAt: RefreshWorld.start))
        #expect(stored.counter == world.device.counter)
        // Refreshed now: not due again for a day.
        #expect(refresher.runPass() == [:])
        world.clock.advance(86_401)
        refresher.runPass()
        #expect(world.fake.requests.count == 2)
        #expect(refresher.outcomes[.refreshed] == 2)
        #expect(refresher.metricsText.text.contains("attestd_receipt_refreshes_total{result=\"refreshed\"} 2"))
        try world.expectNoSecretsLogged()
    }

    @Test("304: the stored receipt stays, its refresh time is set")
    func notModified() throws {
        let world = try RefreshWorld(answer: HTTPResponse(status: 304))
        let refresher = try world.refresher()
        #expect(refresher.runPass() == [.notModified: 1])
        #expect(world.fake.requests.first?.jwtProblems == [])
        let stored = try #require(world.stored)
        #expect(stored.receipt == world.device.receipt)
        var expected = try #require(world.device.receiptState)
        expected.refreshedAt = RefreshWorld.start
        #expect(stored.receiptState == expected)
        #expect(refresher.runPass() == [:])
        #expect(world.fake.requests.count == 1)
    }

    @Test(
        "a refusal changes nothing, is counted and logged, and backs off: no second call before the backoff ends",
        arguments: [
            (400, RefreshOutcome.badRequest, Int64(60)), (401, .unauthorized, 60), (404, .notFound, 60), (429, .rateLimited, 120),
            (503, .serverError, 60),
        ])
    func refused(status: Int, outcome: RefreshOutcome, backoff: Int64) throws {
        let headers = status == 429 ? [HTTPHeader(name: "Retry-After", value: "120")] : []
        let world = try RefreshWorld(answer: HTTPResponse(status: status, headers: headers))
        let refresher = try world.refresher()
        #expect(refresher.runPass() == [outcome: 1])
        #expect(world.fake.requests.count == 1)
        #expect(world.fake.requests.first?.jwtProblems == [])
        #expect(world.stored == world.device)
        #expect(world.log.contains("\"apple.status\":\(status)"))
        #expect(world.log.contains("\"device.key_id\":\"\(Hex.encode(world.device.keyID))\""))
        #expect(world.log.contains("\"backoff_seconds\":\(backoff)"))
        #expect(refresher.runPass() == [:])
        world.clock.advance(backoff - 1)
        #expect(refresher.runPass() == [:])
        #expect(world.fake.requests.count == 1)
        world.clock.advance(1)
        #expect(refresher.runPass() == [outcome: 1])
        #expect(world.fake.requests.count == 2)
        // The second failure doubles the wait.
        #expect(world.log.contains("\"backoff_seconds\":\(max(backoff, 120))"))
        #expect(refresher.outcomes[outcome] == 2)
        try world.expectNoSecretsLogged()
    }

    @Test("no answer (a closed port): a network error, counted and backed off, nothing changed")
    func networkError() throws {
        let world = try RefreshWorld(answer: HTTPResponse(status: 200))
        let closed = try HTTPServer(configuration: HTTPServer.Configuration(host: "127.0.0.1", port: 0, threads: 1), responder: world.fake)
        let port = closed.port
        closed.stop()
        let refresher = try world.refresher(baseURL: "http://127.0.0.1:\(port)")
        #expect(refresher.runPass() == [.networkError: 1])
        #expect(world.stored == world.device)
        #expect(world.log.contains("COULDNT_CONNECT"))
        #expect(refresher.runPass() == [:])
        world.clock.advance(60)
        #expect(refresher.runPass() == [.networkError: 1])
    }

    @Test("a wrong secrets key cannot unseal the DeviceCheck key: logged as an error, no request, no crash")
    func wrongSecretsKey() throws {
        let world = try RefreshWorld(answer: HTTPResponse(status: 304))
        let refresher = try world.refresher(secretsKey: try SecureRandom.bytes(32))
        #expect(refresher.runPass() == [.keyUnavailable: 1])
        #expect(world.fake.requests.isEmpty)
        #expect(world.stored == world.device)
        #expect(world.log.contains("\"level\":\"error\""))
        #expect(world.log.contains("sealed_box_refused"))
        try world.expectNoSecretsLogged()
    }

    @Test("a 200 receipt that does not verify (an ATTEST receipt) is not stored")
    func invalidReceipt() throws {
        let world = try RefreshWorld(answer: HTTPResponse(status: 200))
        let wrong = try world.receipts.receipt(appID: RefreshWorld.appID, created: RefreshWorld.start - 60, risk: 3, type: "ATTEST")
        world.fake.answer(with: HTTPResponse(status: 200, body: Array(Base64Text.encode(wrong).utf8)))
        let refresher = try world.refresher()
        #expect(refresher.runPass() == [.invalidReceipt: 1])
        #expect(world.stored == world.device)
        #expect(world.log.contains("receipt_type"))
    }

    @Test("the background thread runs a pass at start and stops promptly")
    func thread() throws {
        let world = try RefreshWorld(answer: HTTPResponse(status: 304))
        let refresher = try world.refresher()
        refresher.start()
        _ = eventually(within: 10) { !world.fake.requests.isEmpty }
        refresher.stop()
        #expect(world.fake.requests.count == 1)
        #expect(refresher.outcomes[.notModified] == 1)
    }
}

@Suite("Apple's attestationData request")
struct AppleRequestTests {
    @Test("Apple's hosts by environment; --apple-receipt-url replaces both")
    func hosts() throws {
        let client = try HTTPSClient()
        let apple = AppleAttestationDataClient(client: client)
        #expect(apple.url(environment: "production") == "https://data.appattest.apple.com/v1/attestationData")
        #expect(apple.url(environment: "development") == "https://data-development.appattest.apple.com/v1/attestationData")
        let local = AppleAttestationDataClient(client: client, overrideBaseURL: "http://127.0.0.1:9/")
        #expect(local.url(environment: "production") == "http://127.0.0.1:9/v1/attestationData")
    }

    @Test("the JWT: ES256 header with kid, iss and iat, raw 64-byte signature that verifies")
    func jwt() throws {
        let key = try PrivateKey.generate(.p256)
        let jwt = try AppleJWT.sign(keyID: "KID", teamID: "TEAM123456", issuedAt: 1_800_000_000, key: key)
        let parts = jwt.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        #expect(Base64Text.decode(parts[0], .url) == Array(#"{"alg":"ES256","kid":"KID"}"#.utf8))
        #expect(Base64Text.decode(parts[1], .url) == Array(#"{"iss":"TEAM123456","iat":1800000000}"#.utf8))
        let expectation = FakeApple.Expectation(publicKey: try key.publicKey, keyID: "KID", teamID: "TEAM123456", now: { 1_800_000_030 })
        #expect(FakeApple.check(jwt: jwt, expectation) == [])
        #expect(FakeApple.check(jwt: "Bearer " + jwt, expectation) == ["a Bearer prefix"])
        let other = FakeApple.Expectation(
            publicKey: try PrivateKey.generate(.p256).publicKey, keyID: "KID", teamID: "TEAM123456", now: { 1_800_000_030 })
        #expect(FakeApple.check(jwt: jwt, other) == ["the ES256 signature does not verify with the DeviceCheck public key"])
        #expect(throws: CryptoError(.unsupportedCurve, "")) {
            try AppleJWT.sign(keyID: "KID", teamID: "T", issuedAt: 0, key: try PrivateKey.generate(.p384))
        }
    }
}
