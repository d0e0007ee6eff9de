import AttestCore
import AttestCrypto
import AttestService
import AttestTesting
import Foundation
import Synchronization

// Load generator for scripts/bench-load (not a test: it only measures). Closed loop: C threads,
// each with one keep-alive connection, for S seconds, against an attestd that trusts the PKI in
// the `attestctl simulate` state directory.
//
//   attest-load token     --port P --client-id ID --app-id T.B --state DIR
//       attests one synthetic device and prints its access token (for wrk on /v1/authorize).
//   attest-load challenge --port P --client-id ID --app-id T.B --state DIR --connections C --seconds S
//   attest-load attest    ...   (challenges and attestation objects are prepared before the clock
//                               starts, so the timed phase is only POST /v1/attest; each object
//                               costs the client a P-384 signature that is not the server's work)
//   attest-load refresh   ...   (timed loop per device: POST /v1/challenge, sign, POST /v1/token)
//
// Prints `requests_per_second`, `operations_per_second`, `p50_ms`, `p99_ms`, `errors`.

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("attest-load: \(message)\n".utf8))
    exit(1)
}

let mode = CommandLine.arguments.dropFirst().first ?? ""
guard ["token", "challenge", "attest", "refresh"].contains(mode) else {
    fail(
        "usage: attest-load token|challenge|attest|refresh --port P --client-id ID --app-id T.B --state DIR [--connections C] [--seconds S]"
    )
}
guard let port = option("--port").flatMap(UInt16.init), let clientID = option("--client-id"),
    let appID = option("--app-id").flatMap({ try? AppID($0) }), let state = option("--state")
else { fail("--port, --client-id, --app-id and --state are required") }
let connections = option("--connections").flatMap(Int.init) ?? 16
let seconds = option("--seconds").flatMap(Double.init) ?? 5

do {
    let target = LoadTarget(port: port, clientID: clientID, appID: appID, pki: try LoadTarget.pki(stateDirectory: state))
    switch mode {
    case "token":
        let connection = Connection(port: port)
        let response = try connection.post(
            "/v1/attest", try target.attestBody(try SyntheticDevice(), challenge: try target.challenge(connection)))
        guard let token = LoadTarget.token(from: response) else { fail("attest answered \(response.status): \(response.text)") }
        print(token)
    case "challenge":
        ClosedLoop.run(connections: connections, seconds: seconds, port: port) { connection, _ in
            _ = try target.challenge(connection)
            return 1
        }.report(mode: mode, connections: connections)
    case "attest":
        // Enough objects for the whole run (2,000 per second is above what one core verifies),
        // each with its own fresh challenge, prepared before the clock starts: each costs the
        // client a P-384 signature, which is not the server's work.
        let perSlice = Int(seconds * 2_000) / 8
        let prepared = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let connection = Connection(port: port)
            var bodies: [String] = []
            for _ in 0..<perSlice {
                guard let device = try? SyntheticDevice(), let issued = try? target.challenge(connection),
                    let body = try? target.attestBody(device, challenge: issued)
                else { continue }
                bodies.append(body)
            }
            prepared.withLock { $0 += bodies }
        }
        let bodies = prepared.withLock { $0 }
        let next = Atomic<Int>(0)
        ClosedLoop.run(connections: connections, seconds: seconds, port: port) { connection, _ in
            let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < bodies.count else { throw RawHTTPClientError("prepared attestations ran out") }
            let response = try connection.post("/v1/attest", bodies[index])
            guard response.status == 200 else { throw RawHTTPClientError("attest answered \(response.status)") }
            return 1
        }.report(mode: mode, connections: connections)
    default:  // refresh: one registered device per connection, attested before the clock starts
        let devices = Mutex<[Int: SyntheticDevice]>([:])
        for index in 0..<connections {
            let connection = Connection(port: port)
            let device = try SyntheticDevice()
            let response = try connection.post("/v1/attest", try target.attestBody(device, challenge: try target.challenge(connection)))
            guard response.status == 200 else { fail("attest answered \(response.status): \(response.text)") }
            devices.withLock { $0[index] = device }
        }
        ClosedLoop.run(connections: connections, seconds: seconds, port: port) { connection, thread in
            guard var device = devices.withLock({ $0[thread] }) else { throw RawHTTPClientError("no device") }
            let issued = try target.challenge(connection)
            let assertion = try device.assertion(clientData: issued.bytes, appID: target.appID)
            devices.withLock { $0[thread] = device }
            let response = try connection.post("/v1/token", target.refreshBody(device, assertion: assertion, challenge: issued.text))
            guard response.status == 200 else { throw RawHTTPClientError("token answered \(response.status): \(response.text)") }
            return 2
        }.report(mode: mode, connections: connections)
    }
} catch {
    fail("\(error)")
}
