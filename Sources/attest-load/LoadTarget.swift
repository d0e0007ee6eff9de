import AttestCore
import AttestCrypto
import AttestService
import AttestTesting
import Foundation
import Synchronization

/// Where the load goes and as whom; every helper a worker thread calls.
struct LoadTarget: Sendable {
    let port: UInt16
    let clientID: String
    let appID: AppID
    let pki: SyntheticPKI

    /// The state directory of `attestctl simulate`: its root and intermediate keys and certificates.
    static func pki(stateDirectory state: String) throws -> SyntheticPKI {
        func text(_ name: String) throws -> String { try String(contentsOfFile: "\(state)/\(name)", encoding: .utf8) }
        return SyntheticPKI(
            rootKey: try PrivateKey(pem: text("root-key.pem")), root: try Certificate(pemEncoded: text("root.pem")),
            intermediateKey: try PrivateKey(pem: text("intermediate-key.pem")),
            intermediate: try Certificate(pemEncoded: text("intermediate.pem")))
    }

    func challenge(_ connection: Connection) throws -> (text: String, bytes: [UInt8]) {
        let response = try connection.post("/v1/challenge", #"{"client_id":"\#(clientID)"}"#)
        guard response.status == 200, let text = response.text.split(separator: "\"").dropFirst(3).first.map(String.init),
            let bytes = Base64Text.decode(text, .url)
        else { throw RawHTTPClientError("challenge answered \(response.status): \(response.text)") }
        return (text, bytes)
    }

    func attestBody(_ device: SyntheticDevice, challenge: (text: String, bytes: [UInt8])) throws -> String {
        let parts = device.attestationParts(
            appID: appID, environment: .production, clientDataHash: Digest.sha256(challenge.bytes),
            time: Int64(Date().timeIntervalSince1970))
        let object = try device.attestationObject(parts, pki: pki)
        return
            #"{"client_id":"\#(clientID)","key_id":"\#(Base64Text.encode(device.keyID))","attestation":"\#(Base64Text.encode(object))","challenge":"\#(challenge.text)"}"#
    }

    func refreshBody(_ device: SyntheticDevice, assertion: [UInt8], challenge: String) -> String {
        #"{"client_id":"\#(clientID)","key_id":"\#(Base64Text.encode(device.keyID))","assertion":"\#(Base64Text.encode(assertion))","challenge":"\#(challenge)"}"#
    }

    static func token(from response: RawHTTPResponse) -> String? {
        guard response.status == 200, let range = response.text.range(of: #""access_token":""#) else { return nil }
        return String(response.text[range.upperBound...].prefix { $0 != "\"" })
    }
}

/// One keep-alive connection, reopened if the server closes it.
final class Connection {
    private let port: UInt16
    private var client: RawHTTPClient?

    init(port: UInt16) { self.port = port }

    func post(_ path: String, _ json: String) throws -> RawHTTPResponse {
        let client = try self.client ?? RawHTTPClient(port: port)
        self.client = client
        do {
            return try client.postJSON(path, json)
        } catch {
            self.client = nil
            throw error
        }
    }
}

/// What a closed-loop run measured.
struct LoadResult {
    var requests = 0
    var operations = 0
    var latencies: [Double] = []
    var errors = 0
    var elapsed = 0.0

    func report(mode: String, connections: Int) {
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        print("mode \(mode) connections \(connections) seconds \(String(format: "%.2f", elapsed))")
        print("requests_per_second \(String(format: "%.1f", Double(requests) / elapsed))")
        print("operations_per_second \(String(format: "%.1f", Double(operations) / elapsed))")
        print("p50_ms \(String(format: "%.2f", percentile(0.5)))")
        print("p99_ms \(String(format: "%.2f", percentile(0.99)))")
        print("errors \(errors)")
    }
}

enum ClosedLoop {
    /// Runs `body(connection, thread)` on `connections` threads until `seconds` pass; each call
    /// returns how many requests it made.
    static func run(
        connections: Int, seconds: Double, port: UInt16, _ body: @escaping @Sendable (Connection, Int) throws -> Int
    ) -> LoadResult {
        let results = Mutex(LoadResult())
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        let group = DispatchGroup()
        let start = ContinuousClock.now
        for thread in 0..<connections {
            group.enter()
            Thread {
                let connection = Connection(port: port)
                var local = LoadResult()
                while ContinuousClock.now < deadline {
                    let began = ContinuousClock.now
                    do {
                        local.requests += try body(connection, thread)
                        local.operations += 1
                        let took = ContinuousClock.now - began
                        local.latencies.append(Double(took.components.seconds) * 1000 + Double(took.components.attoseconds) / 1e15)
                    } catch {
                        local.errors += 1
                    }
                }
                results.withLock {
                    $0.requests += local.requests
                    $0.operations += local.operations
                    $0.latencies += local.latencies
                    $0.errors += local.errors
                }
                group.leave()
            }.start()
        }
        group.wait()
        let took = ContinuousClock.now - start
        var result = results.withLock { $0 }
        result.elapsed = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
        return result
    }
}
