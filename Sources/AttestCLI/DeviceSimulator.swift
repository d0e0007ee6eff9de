import AttestCore
import AttestCrypto
import AttestService
import AttestTesting
import Foundation
import Synchronization

/// What one `attestctl simulate` run does: where, as which app, how many devices and how hard.
struct SimulationPlan: Sendable {
    let host: String
    let port: UInt16
    let clientID: String
    let appID: AppID
    let environment: AppAttestEnvironment
    let devices: Int
    let refreshes: Int
    let concurrency: Int

    /// The URL as given back to people (`[...]` around an IPv6 host).
    var url: String { host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)" }
}

/// The requests a simulated device makes, in the order of the device flow.
enum SimulationStep: String, CaseIterable, Sendable {
    case challenge, attest, refresh, authorize
}

/// Why one request did not succeed: the server's problem `code`/`reason` with its status, or a
/// local failure (`transport`, `unexpected_response`, `simulator`) with no status.
struct StepFailure: Hashable, Sendable {
    let status: Int?
    let code: String
    let reason: String
}

/// One request made by a simulated device.
struct StepOutcome: Sendable {
    let step: SimulationStep
    let duration: Duration
    let failure: StepFailure?
}

/// Everything a run observed.
struct SimulationResult: Sendable {
    let outcomes: [StepOutcome]
    let completedDevices: Int
    let elapsed: Duration
    let threads: Int

    var failed: Bool { outcomes.contains { $0.failure != nil } }
}

/// Runs the plan's devices on plain threads with blocking sockets, at most `concurrency` at once.
struct DeviceSimulator: Sendable {
    let plan: SimulationPlan
    let pki: SyntheticPKI
    /// Unix seconds, for the credential certificates' validity (the server checks it against its clock).
    let now: @Sendable () -> Int64

    /// Shared by the worker threads: the next device to run and what finished devices recorded.
    private final class Progress: Sendable {
        let nextDevice = Atomic<Int>(0)
        let logs = Mutex<[DeviceLog]>([])
    }

    func run() -> SimulationResult {
        let threads = min(plan.devices, plan.concurrency)
        let progress = Progress()
        let finished = DispatchSemaphore(value: 0)
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<threads {
            let thread = Thread { [self] in
                var connection = Connection(host: plan.host, port: plan.port)
                var logs: [DeviceLog] = []
                while progress.nextDevice.wrappingAdd(1, ordering: .relaxed).oldValue < plan.devices {
                    var log = DeviceLog()
                    runDevice(&connection, &log)
                    logs.append(log)
                }
                progress.logs.withLock { $0 += logs }
                finished.signal()
            }
            thread.start()
        }
        for _ in 0..<threads { finished.wait() }
        let elapsed = clock.now - start
        let logs = progress.logs.withLock { $0 }
        return SimulationResult(
            outcomes: logs.flatMap(\.outcomes), completedDevices: logs.filter(\.completed).count, elapsed: elapsed, threads: threads)
    }

    /// One device: challenge, attest, authorize the token; then per refresh challenge, assertion,
    /// /v1/token and authorize. A failed challenge, attest or refresh ends the device (what follows
    /// depends on it); a failed authorization does not.
    private func runDevice(_ connection: inout Connection, _ log: inout DeviceLog) {
        var device: SyntheticDevice
        do {
            device = try SyntheticDevice()
        } catch {
            log.localFailure(.attest, "cannot make a device key: \(error)")
            return
        }
        let keyID = Data(device.keyID).base64EncodedString()
        guard let first = challenge(&connection, &log) else { return }
        let object: [UInt8]
        do {
            let parts = device.attestationParts(
                appID: plan.appID, environment: plan.environment, clientDataHash: Digest.sha256(first.bytes), time: now())
            object = try device.attestationObject(parts, pki: pki)
        } catch {
            log.localFailure(.attest, "cannot make the attestation: \(error)")
            return
        }
        let attest = SimulatedRequest.json(
            "/v1/attest",
            [
                "client_id": plan.clientID, "key_id": keyID, "attestation": Data(object).base64EncodedString(),
                "challenge": first.text,
            ])
        guard let firstToken = connection.perform(.attest, attest, log: &log, answer: { $0["access_token"] as? String }) else { return }
        authorize(firstToken, &connection, &log)
        for _ in 0..<plan.refreshes {
            guard let next = challenge(&connection, &log) else { return }
            let assertion: [UInt8]
            do {
                assertion = try device.assertion(clientData: next.bytes, appID: plan.appID)
            } catch {
                log.localFailure(.refresh, "cannot make the assertion: \(error)")
                return
            }
            let refresh = SimulatedRequest.json(
                "/v1/token",
                [
                    "client_id": plan.clientID, "key_id": keyID, "assertion": Data(assertion).base64EncodedString(),
                    "challenge": next.text,
                ])
            guard let token = connection.perform(.refresh, refresh, log: &log, answer: { $0["access_token"] as? String }) else { return }
            authorize(token, &connection, &log)
        }
        log.completed = true
    }

    private func challenge(_ connection: inout Connection, _ log: inout DeviceLog) -> (text: String, bytes: [UInt8])? {
        connection.perform(.challenge, .json("/v1/challenge", ["client_id": plan.clientID]), log: &log) { body in
            // The client data are the challenge's 32 raw bytes (docs/API.md).
            guard let text = body["challenge"] as? String, let bytes = Base64Text.decode(text, .url), bytes.count == 32 else { return nil }
            return (text, bytes)
        }
    }

    private func authorize(_ token: String, _ connection: inout Connection, _ log: inout DeviceLog) {
        let request = SimulatedRequest(method: "GET", target: "/v1/authorize", headers: [("Authorization", "Bearer \(token)")], body: [])
        _ = connection.perform(.authorize, request, log: &log) { _ in () }
    }
}

/// What one device's requests recorded.
private struct DeviceLog {
    var outcomes: [StepOutcome] = []
    var completed = false

    mutating func localFailure(_ step: SimulationStep, _ detail: String) {
        outcomes.append(StepOutcome(step: step, duration: .zero, failure: StepFailure(status: nil, code: "simulator", reason: detail)))
    }
}

/// One HTTP request of the device flow.
private struct SimulatedRequest {
    let method: String
    let target: String
    let headers: [(String, String)]
    let body: [UInt8]

    /// A POST of one JSON object of strings.
    static func json(_ target: String, _ fields: [String: String]) -> SimulatedRequest {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(fields)).map { Array($0) } ?? []
        return SimulatedRequest(method: "POST", target: target, headers: [("Content-Type", "application/json")], body: body)
    }
}

/// A keep-alive connection of one worker thread, reopened after a transport failure.
private struct Connection {
    let host: String
    let port: UInt16
    private var client: RawHTTPClient?

    init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Sends `request` and records its latency and outcome: success is a 200 whose JSON body
    /// `answer` can read. Returns what `answer` read, or nil when the step failed.
    mutating func perform<Answer>(
        _ step: SimulationStep, _ request: SimulatedRequest, log: inout DeviceLog, answer: ([String: Any]) -> Answer?
    ) -> Answer? {
        let clock = ContinuousClock()
        let start = clock.now
        let response: RawHTTPResponse
        do {
            if client == nil { client = try RawHTTPClient(host: host, port: port, receiveTimeoutSeconds: 30) }
            guard let client else { return nil }
            response = try client.request(request.method, request.target, headers: request.headers, body: request.body)
        } catch {
            client = nil
            let failure = StepFailure(status: nil, code: "transport", reason: error.description)
            log.outcomes.append(StepOutcome(step: step, duration: clock.now - start, failure: failure))
            return nil
        }
        let duration = clock.now - start
        if response.header("Connection")?.lowercased() == "close" { client = nil }
        let body = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        guard response.status == 200 else {
            let code = body?["code"] as? String ?? "http_\(response.status)"
            let reason = body?["reason"] as? String ?? code
            log.outcomes.append(
                StepOutcome(step: step, duration: duration, failure: StepFailure(status: response.status, code: code, reason: reason)))
            return nil
        }
        guard let value = answer(body ?? [:]) else {
            let failure = StepFailure(status: 200, code: "unexpected_response", reason: "the 200 answer lacks the expected fields")
            log.outcomes.append(StepOutcome(step: step, duration: duration, failure: failure))
            return nil
        }
        log.outcomes.append(StepOutcome(step: step, duration: duration, failure: nil))
        return value
    }
}
