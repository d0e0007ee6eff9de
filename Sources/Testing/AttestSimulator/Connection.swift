import AttestCrypto
import Foundation

/// The requests a simulated device makes, in the order of the device flow.
package enum SimulationStep: String, CaseIterable, Sendable {
    case challenge, attest, refresh, authorize
}

/// Why one step did not succeed: the server's problem `code`/`reason` with its status, or a local
/// failure (`transport`, `unexpected_response`, `simulator`) with no status.
package struct StepFailure: Error, Hashable, Sendable, CustomStringConvertible {
    package let status: Int?
    package let code: String
    package let reason: String

    package init(status: Int?, code: String, reason: String) { (self.status, self.code, self.reason) = (status, code, reason) }

    /// A failure of the simulator itself (making a key, an object or a signature).
    package static func simulator(_ reason: String) -> StepFailure {
        StepFailure(status: nil, code: "simulator", reason: reason)
    }

    package var description: String { "\(status.map { "HTTP \($0)" } ?? "no answer") code=\(code) reason=\(reason)" }
}

/// One step a simulated device took.
package struct StepOutcome: Sendable {
    package let step: SimulationStep
    package let duration: Duration
    package let failure: StepFailure?
}

/// What one device's steps recorded.
package struct DeviceLog: Sendable {
    package var outcomes: [StepOutcome] = []
    /// True once the device finished every step of its flow.
    package var completed = false
    /// The last access token the device was given (for checks that revoke and try it again).
    package var lastToken: String?

    package init() {}

    /// Records a step that failed before any request was sent.
    package mutating func record(_ step: SimulationStep, _ failure: StepFailure) {
        outcomes.append(StepOutcome(step: step, duration: .zero, failure: failure))
    }

    /// The failure of the last step, if it failed.
    package var lastFailure: StepFailure? { outcomes.last?.failure }
}

/// One HTTP request of the device flow.
package struct DeviceRequest: Sendable {
    package let method: String
    package let target: String
    package let headers: [(String, String)]
    package let body: [UInt8]

    /// A request as given.
    package init(method: String, target: String, headers: [(String, String)], body: [UInt8]) {
        (self.method, self.target, self.headers, self.body) = (method, target, headers, body)
    }

    /// A POST of one JSON object of strings.
    package static func json(_ target: String, _ fields: [String: String]) -> DeviceRequest {
        let body = Array(JSONText.object(fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }).utf8)
        return DeviceRequest(method: "POST", target: target, headers: [("Content-Type", "application/json")], body: body)
    }
}

/// The keep-alive connection of one simulated device's thread to attestd, reopened after a
/// transport failure or a `Connection: close`. `attestctl simulate` and `attest-load` both use it.
package struct Connection {
    package let host: String
    package let port: UInt16
    private let receiveTimeoutSeconds: Int
    private var client: HTTPClient?

    package init(host: String = "127.0.0.1", port: UInt16, receiveTimeoutSeconds: Int = 30) {
        (self.host, self.port, self.receiveTimeoutSeconds) = (host, port, receiveTimeoutSeconds)
    }

    /// Sends `request` and records its latency and outcome in `log`: success is a 200 whose body
    /// `answer` can read. Returns what `answer` read, or nil when the step failed.
    package mutating func perform<Answer>(
        _ step: SimulationStep, _ request: DeviceRequest, log: inout DeviceLog, answer: ([UInt8]) -> Answer?
    ) -> Answer? {
        let clock = ContinuousClock()
        let start = clock.now
        let response: HTTPClientResponse
        do throws(HTTPClientError) {
            let client: HTTPClient
            if let open = self.client {
                client = open
            } else {
                client = try HTTPClient(host: host, port: port, receiveTimeoutSeconds: receiveTimeoutSeconds)
                self.client = client
            }
            response = try client.request(request.method, request.target, headers: request.headers, body: request.body)
        } catch {
            client = nil
            let failure = StepFailure(status: nil, code: "transport", reason: error.description)
            log.outcomes.append(StepOutcome(step: step, duration: clock.now - start, failure: failure))
            return nil
        }
        let duration = clock.now - start
        if response.header("Connection")?.lowercased() == "close" { client = nil }
        guard response.status == 200 else {
            // A problem+json body (docs/API.md); anything else is reported by its status alone.
            let problem = try? JSONDecoder().decode(ProblemAnswer.self, from: Data(response.body))
            let code = problem?.code ?? "http_\(response.status)"
            let failure = StepFailure(status: response.status, code: code, reason: problem?.reason ?? code)
            log.outcomes.append(StepOutcome(step: step, duration: duration, failure: failure))
            return nil
        }
        guard let value = answer(response.body) else {
            let failure = StepFailure(status: 200, code: "unexpected_response", reason: "the 200 answer lacks the expected fields")
            log.outcomes.append(StepOutcome(step: step, duration: duration, failure: failure))
            return nil
        }
        log.outcomes.append(StepOutcome(step: step, duration: duration, failure: nil))
        return value
    }

    /// Like `perform(_:_:log:answer:)`, reading the 200 body as the JSON object `Answer`.
    package mutating func perform<Answer: Decodable>(
        _ step: SimulationStep, _ request: DeviceRequest, log: inout DeviceLog, as type: Answer.Type
    ) -> Answer? {
        perform(step, request, log: &log) { body in try? JSONDecoder().decode(Answer.self, from: Data(body)) }
    }
}

/// The fields of a problem+json answer the simulator reports.
private struct ProblemAnswer: Decodable {
    let code: String?
    let reason: String?
}
