import AttestCrypto
import AttestSimulator
import Foundation
import Synchronization

/// `attest-load trace` for scripts/check failover: every answer recorded, not measured in bulk.
///
/// `devices` threads, thread i against `ports[i mod n]`, each with one synthetic device: it
/// attests (again after a failure), then refreshes (challenge, assertion with the next counter,
/// /v1/token) and authorizes its newest token, until `seconds` pass. Every request prints one JSON
/// line on stdout, written as it is answered:
///
///   {"at": unix ms when answered, "port": P, "step": "challenge|attest|refresh|authorize",
///    "status": 200 | 503 | ... | 0 (no answer), "retry_after": "1" | null, "code", "reason": the problem's | null,
///    "ms": latency, "key_id": hex, "counter": the assertion's counter (refresh), "token": minted (attest, refresh)}
///
/// A failure does not end a device: it waits `failurePauseMilliseconds` (a client honouring a short
/// Retry-After) and goes on, so the trace shows when each node serves again. Every receive gives up
/// after `LoadPlan.receiveTimeoutSeconds`: a silent node is an answer of status 0, never a hang.
enum Trace {
    static let failurePauseMilliseconds: UInt32 = 100
    /// Between two rounds of a device, to leave the shared cores to the servers.
    static let roundPauseMilliseconds: UInt32 = 20

    /// One answer (or its absence) to one request.
    struct Answer {
        let status: Int
        let retryAfter: String?
        let body: [UInt8]
        let milliseconds: Int64

        /// The problem's `code` and `reason` (nil for a 200 or a body that is no problem).
        var problem: (code: String?, reason: String?) {
            struct Problem: Decodable { let code: String?, reason: String? }
            guard status != 200, let problem = try? JSONDecoder().decode(Problem.self, from: Data(body)) else { return (nil, nil) }
            return (problem.code, problem.reason)
        }
        var reason: String? { problem.reason }
    }

    static func run(flow: DeviceFlow, ports: [UInt16], devices: Int, seconds: Double) {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        let output = Output()
        let group = DispatchGroup()
        for thread in 0..<devices {
            group.enter()
            Thread {
                defer { group.leave() }
                var node = Node(port: ports[thread % ports.count], output: output)
                guard var device = try? SyntheticDevice() else {
                    node.print(["step": "attest", "status": 0, "code": "simulator"])
                    return
                }
                var token: String?
                var registered = false
                while ContinuousClock.now < deadline {
                    let ok = !registered ? register(device, flow, &node, &token, &registered) : refresh(&device, flow, &node, &token)
                    if let current = token {
                        let request = DeviceRequest(
                            method: "GET", target: "/v1/authorize", headers: [("Authorization", "Bearer \(current)")], body: [])
                        let answer = node.send(request)
                        node.record("authorize", answer, device: device)
                    }
                    usleep((ok ? roundPauseMilliseconds : failurePauseMilliseconds) * 1000)
                }
            }.start()
        }
        group.wait()
    }

    /// Challenge and /v1/attest; sets `token` on success, and `registered` (the result) also on a
    /// 409 `key_already_registered`: an earlier attestation committed although its answer was lost
    /// (a timeout), and the device goes on to refresh.
    static func register(
        _ device: SyntheticDevice, _ flow: DeviceFlow, _ node: inout Node, _ token: inout String?, _ registered: inout Bool
    ) -> Bool {
        guard let issued = challenge(flow, &node, device), let request = try? flow.attestRequest(device, answering: issued) else {
            return false
        }
        let answer = node.send(request)
        token = minted(answer)
        registered = token != nil || (answer.status == 409 && answer.reason == "key_already_registered")
        node.record("attest", answer, device: device, token: token)
        return registered
    }

    /// Challenge, assertion with the next counter and /v1/token; sets `token` on success.
    static func refresh(_ device: inout SyntheticDevice, _ flow: DeviceFlow, _ node: inout Node, _ token: inout String?) -> Bool {
        guard let issued = challenge(flow, &node, device),
            let assertion = try? device.assertion(clientData: issued.bytes, appID: flow.appID)
        else { return false }
        let answer = node.send(flow.refreshRequest(device, assertion: assertion, answering: issued))
        let fresh = minted(answer)
        node.record("refresh", answer, device: device, counter: device.counter, token: fresh)
        if let fresh { token = fresh }
        return fresh != nil
    }

    static func challenge(_ flow: DeviceFlow, _ node: inout Node, _ device: SyntheticDevice) -> IssuedChallenge? {
        struct Issued: Decodable { let challenge: String }
        let answer = node.send(.json("/v1/challenge", ["client_id": flow.clientID]))
        node.record("challenge", answer, device: device)
        guard answer.status == 200, let issued = try? JSONDecoder().decode(Issued.self, from: Data(answer.body)),
            let bytes = Base64Text.decode(issued.challenge, .url), bytes.count == 32
        else { return nil }
        return IssuedChallenge(text: issued.challenge, bytes: bytes)
    }

    static func minted(_ answer: Answer) -> String? {
        struct Token: Decodable { let access_token: String }
        guard answer.status == 200 else { return nil }
        return (try? JSONDecoder().decode(Token.self, from: Data(answer.body)))?.access_token
    }

    /// One thread's keep-alive connection to one node, reopened after a transport failure.
    struct Node {
        let port: UInt16
        let output: Output
        var client: HTTPClient?

        init(port: UInt16, output: Output) {
            (self.port, self.output, client) = (port, output, nil)
        }

        mutating func send(_ request: DeviceRequest) -> Answer {
            let start = ContinuousClock.now
            func elapsed() -> Int64 {
                let took = ContinuousClock.now - start
                return took.components.seconds * 1000 + took.components.attoseconds / 1_000_000_000_000_000
            }
            do throws(HTTPClientError) {
                let open: HTTPClient
                if let kept = client {
                    open = kept
                } else {
                    open = try HTTPClient(port: port, receiveTimeoutSeconds: LoadPlan.receiveTimeoutSeconds)
                    client = open
                }
                let response = try open.request(request.method, request.target, headers: request.headers, body: request.body)
                if response.header("Connection")?.lowercased() == "close" { client = nil }
                return Answer(
                    status: response.status, retryAfter: response.header("Retry-After"), body: response.body, milliseconds: elapsed())
            } catch {
                client = nil
                return Answer(status: 0, retryAfter: nil, body: [], milliseconds: elapsed())
            }
        }

        func record(_ step: String, _ answer: Answer, device: SyntheticDevice, counter: UInt32? = nil, token: String? = nil) {
            let problem = answer.problem
            print([
                "step": step, "status": answer.status, "retry_after": answer.retryAfter, "code": problem.code, "reason": problem.reason,
                "ms": answer.milliseconds,
                "key_id": Hex.encode(device.keyID), "counter": counter, "token": token,
            ])
        }

        func print(_ fields: [String: (any Sendable)?]) {
            let at = Int64(Date().timeIntervalSince1970 * 1000)
            let members: [(String, any Sendable)] =
                [("at", at), ("port", Int(port))] + fields.sorted { $0.key < $1.key }.compactMap { key, value in value.map { (key, $0) } }
            let line = JSONText.object(members) + "\n"
            output.write(line)
        }
    }

    /// Standard output shared by the threads: one whole line per write.
    final class Output: Sendable {
        private let lock = Mutex(())

        func write(_ line: String) {
            lock.withLock { _ in FileHandle.standardOutput.write(Data(line.utf8)) }
        }
    }
}
