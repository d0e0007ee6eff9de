import AttestCore
import AttestCrypto
import AttestHTTPServer
import AttestOptions
import AttestService
import AttestStorage
import AttestTesting
import Foundation

// Verification throughput on one thread, for scripts/bench-verify (which prints it beside
// `openssl speed` and pyattest from the same run). Not a test: it only measures.
//
//   attest-bench [--seconds S] [--case ID] [--iterations N]   (attest-bench --help lists them)
//   attest-bench --service [--seconds S]   (the refresh use case in process: challenge + assertion
//                                          + token, with a temporary SQLite database; no HTTP)
//   attest-bench --hello PORT              (attestd's HTTP server, libmicrohttpd and its wrapper,
//                                          answering 200 with no router or store behind it, on
//                                          127.0.0.1 until killed: scripts/bench-load's second ceiling)
//
// Prints `attestation_verifications_per_second`, `attestation_uncached_verifications_per_second`
// (a fresh verifier each time, so both P-384 signatures are checked) and
// `assertion_verifications_per_second`.

/// The command line, validated.
struct BenchPlan {
    static let seconds = OptionSpec("seconds", value: "S", help: "length of each measurement (default 3)")
    static let caseID = OptionSpec(
        "case", value: "ID", help: "recorded attestation under fixtures/appattest/recorded (default veehaitch_ios-14.4_attestation)")
    static let iterations = OptionSpec(
        "iterations", value: "N", help: "verify N times each, untimed, and print nothing (for callgrind)")
    static let service = OptionSpec(
        flag: "service", help: "measure the refresh use case in process (challenge + assertion + token, temporary SQLite)")
    static let hello = OptionSpec("hello", value: "PORT", help: "serve 200 on 127.0.0.1:PORT with attestd's HTTP server until killed")
    static let options = OptionTable([seconds, caseID, iterations, service, hello])

    static var usage: String {
        let lines =
            ["usage: attest-bench \(options.synopsis)", "", "Verification throughput on one thread.", "", "options:"]
            + options.optionColumns
        return lines.joined(separator: "\n") + "\n"
    }

    let seconds: Double
    let caseID: String
    let iterations: Int?
    let service: Bool
    let helloPort: Int?

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.options.parse(arguments)
        seconds = try parsed.decimal(Self.seconds, atLeast: 0.001) ?? 3
        caseID = parsed.value(Self.caseID) ?? "veehaitch_ios-14.4_attestation"
        iterations = try parsed.integer(Self.iterations, in: 1...Int.max)
        service = parsed.flag(Self.service)
        helloPort = try parsed.integer(Self.hello, in: 1...65_535)
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("attest-bench: \(message)\n".utf8))
    exit(1)
}

func rate(seconds: Double, _ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    let limit = Duration.milliseconds(Int64(seconds * 1000))
    var count = 0
    while clock.now - start < limit {
        for _ in 0..<16 { try body() }
        count += 16
    }
    let elapsed = clock.now - start
    return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

let plan = CommandLineEntry.parse(program: "attest-bench", usage: BenchPlan.usage, arguments: Array(CommandLine.arguments.dropFirst())) {
    arguments throws(UsageError) in try BenchPlan(arguments)
}
let seconds = plan.seconds

/// Answers 200 with an empty body at once, as nginx's `return 200`.
struct Hello: HTTPResponder {
    func respond(to request: HTTPRequest) -> HTTPResponse { HTTPResponse(status: 200) }
}

if let port = plan.helloPort {
    do {
        // The threads attestd runs by default (four per core), and no per-address cap, as in bench-load.
        let configuration = HTTPServer.Configuration(
            port: UInt16(port), threads: 4 * HTTPServer.Configuration.activeCoreCount, perAddressConnectionLimit: 0)
        let server = try HTTPServer(configuration: configuration, responder: Hello())
        FileHandle.standardOutput.write(Data("listening \(server.port)\n".utf8))
        while true { sleep(3600) }
    } catch {
        fail("\(error)")
    }
}

if plan.service {
    do {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attest-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let now = Int64(Date().timeIntervalSince1970)
        let store = try SQLiteTokenStore(path: directory.appendingPathComponent("bench.sqlite").path, migrateAt: now)
        let pki = try SyntheticPKI(validAround: now)
        var policy = ServicePolicy()
        policy.perAddress = .unlimited
        policy.challengePerIntegration = .unlimited
        // A clock that never moves, so tokens and challenges never expire during the run.
        let clock = SettableWallClock(now)
        let service = TokenService(store: store, verifier: try AttestationVerifier(anchor: pki.anchor), clock: clock, policy: policy)
        let integration = try IntegrationAdmin(store: store, clock: clock).create(
            workspaceID: "bench", name: "bench", teamID: "ABCDE12345", bundleIDs: ["com.example.bench"], environments: [.production])
        let appID = try AppID(teamID: "ABCDE12345", bundleID: "com.example.bench")
        guard let clientID = integration.issuedClientID else { fail("the integration's client ID is malformed") }
        var device = try SyntheticDevice()
        let first = try service.issueChallenge(clientID: clientID, from: "bench")
        let firstBytes = Base64Text.decode(first.challenge, .url) ?? []
        let parts = device.attestationParts(appID: appID, environment: .production, clientDataHash: Digest.sha256(firstBytes), time: now)
        guard let keyID = KeyID(device.keyID), let firstChallenge = Challenge(firstBytes) else { fail("bad synthetic device") }
        _ = try service.attest(
            AttestRequest(
                clientID: clientID, keyID: keyID, object: try device.attestationObject(parts, pki: pki),
                challenge: firstChallenge),
            from: "bench")
        let refreshes = try rate(seconds: seconds) {
            let challenge = try service.issueChallenge(clientID: clientID, from: "bench")
            let bytes = Base64Text.decode(challenge.challenge, .url) ?? []
            let assertion = try device.assertion(clientData: bytes, appID: appID)
            guard let presented = Challenge(bytes) else { fail("bad challenge") }
            _ = try service.refresh(
                RefreshRequest(clientID: clientID, keyID: keyID, object: assertion, challenge: presented), from: "bench")
        }
        print("service_refreshes_per_second \(String(format: "%.1f", refreshes))  (includes signing the assertion)")
        exit(0)
    } catch {
        fail("\(error)")
    }
}
let caseID = plan.caseID

do {
    let attestation = try Fixtures.recordedCase(caseID)
    guard let pairedAssertion = try Fixtures.recordedCases().first(where: { $0.pairedAttestationID == caseID }) else {
        fail("no assertion is paired with \(caseID)")
    }
    guard let object = attestation.object, let keyID = attestation.keyID, let clientDataHash = attestation.clientDataHash,
        let time = attestation.verifyAtUnix, let assertionObject = pairedAssertion.object,
        let assertionHash = pairedAssertion.clientDataHash, let pem = pairedAssertion.publicKeyPEM
    else { fail("\(caseID) lacks a field the benchmark needs") }
    let input = AttestationInput(
        object: object, keyID: keyID, clientDataHash: clientDataHash, appIDs: [try AppID(attestation.appID)],
        allowedEnvironments: Set(AppAttestEnvironment.allCases), time: time)
    let anchor = try TrustAnchor.appleAppAttestationRoot()
    let verifier = try AttestationVerifier(anchor: anchor)
    // Prove the measured path really accepts before timing it.
    _ = try verifier.verify(input)
    let assertionInput = AssertionInput(
        object: assertionObject, clientDataHash: assertionHash, publicKey: try PublicKey(pem: pem),
        appIDs: [try AppID(pairedAssertion.appID)], previousCounter: pairedAssertion.previousCounter ?? 0)
    _ = try AssertionVerifier.verify(assertionInput)

    if let iterations = plan.iterations {
        // Fixed work for instruction counting (valgrind --tool=callgrind): no clock involved.
        for _ in 0..<iterations { _ = try verifier.verify(input) }
        for _ in 0..<iterations { _ = try AssertionVerifier.verify(assertionInput) }
        exit(0)
    }
    let attestations = try rate(seconds: seconds) { _ = try verifier.verify(input) }
    let uncached = try rate(seconds: seconds) { _ = try AttestationVerifier(anchor: anchor).verify(input) }
    let assertions = try rate(seconds: seconds) { _ = try AssertionVerifier.verify(assertionInput) }
    print("case \(caseID)")
    print("attestation_verifications_per_second \(String(format: "%.1f", attestations))")
    print("attestation_uncached_verifications_per_second \(String(format: "%.1f", uncached))")
    print("assertion_verifications_per_second \(String(format: "%.1f", assertions))")
} catch {
    fail("\(error)")
}
