import AttestCore
import AttestCrypto
import AttestOptions
import AttestSimulator
import Foundation
import Synchronization

// Load generator for scripts/bench-load (not a test: it only measures). Closed loop: C threads,
// each with one keep-alive connection, for S seconds, against an attestd that trusts the PKI in
// the `attestctl simulate` state directory. The device side is AttestSimulator's `DeviceFlow`,
// the same code `attestctl simulate` runs.
//
//   attest-load token     --port P --client-id ID --app-id T.B --state DIR
//       attests one synthetic device and prints its access token (for wrk on /v1/authorize).
//   attest-load challenge --port P --client-id ID --app-id T.B --state DIR --connections C --seconds S
//   attest-load attest    ...   (challenges and attestation objects are prepared before the clock
//                               starts, so the timed phase is only POST /v1/attest; each object
//                               costs the client a P-384 signature that is not the server's work)
//   attest-load refresh   ...   (timed loop per device: POST /v1/challenge, sign, POST /v1/token)
//   attest-load race-challenge --port P1,P2,P3 ... --connections N
//       one challenge, N devices attesting with it at once, spread over the nodes (one may win)
//   attest-load race-counter   --port P1,P2,P3 ... --connections N
//       one device, N assertions with the same counter over N fresh challenges (one may win)
//   attest-load trace --port P1,P2 ... --connections N --seconds S
//       N devices over the nodes, each attesting, then refreshing and authorizing until S pass;
//       one JSON line per answer (scripts/check failover: Trace.swift)
//
// The timed modes print `requests_per_second`, `operations_per_second`, `p50_ms`, `p99_ms`, `errors`.

/// What one run does, validated from the command line.
struct LoadPlan {
    enum Mode: String, CaseIterable {
        case token, challenge, attest, refresh
        case raceChallenge = "race-challenge"
        case raceCounter = "race-counter"
        case trace
    }

    static let port = OptionSpec(
        "port", value: "P[,P...]", help: "attestd's port on 127.0.0.1 (race modes: several nodes' ports)", required: true)
    static let clientID = OptionSpec("client-id", value: "ID", help: "client ID of an integration for the app", required: true)
    static let appID = OptionSpec("app-id", value: "T.B", help: "App ID the devices claim (TEAMID.BUNDLEID)", required: true)
    static let state = OptionSpec(
        "state", value: "DIR", help: "state directory of `attestctl simulate`, whose root attestd trusts", required: true)
    static let connections = OptionSpec("connections", value: "C", help: "threads, one keep-alive connection each (default 16)")
    static let seconds = OptionSpec("seconds", value: "S", help: "length of the timed phase (default 5)")
    static let options = OptionTable(
        [port, clientID, appID, state, connections, seconds], positionals: [Mode.allCases.map(\.rawValue).joined(separator: "|")])

    static var usage: String {
        let lines =
            ["usage: attest-load \(options.synopsis)", "", "Closed-loop load on attestd with synthetic devices.", "", "options:"]
            + options.optionColumns
        return lines.joined(separator: "\n") + "\n"
    }

    /// A load generator waits longer than a test would, but still gives up on a silent server.
    static let receiveTimeoutSeconds = 5

    let mode: Mode
    let port: UInt16
    /// Every port given (race modes spread their requests over them).
    let ports: [UInt16]
    let clientID: String
    let appID: AppID
    let state: String
    let connections: Int
    let seconds: Double

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.options.parse(arguments)
        guard let mode = Mode(rawValue: parsed.positionals[0]) else {
            throw UsageError(message: "unknown mode '\(parsed.positionals[0])'")
        }
        self.mode = mode
        let ports = parsed.required(Self.port).split(separator: ",").map { UInt16($0) ?? 0 }
        guard !ports.isEmpty, !ports.contains(0) else { throw UsageError(message: "--port takes 1 to 65535 (or a comma-separated list)") }
        self.ports = ports
        port = ports[0]
        clientID = parsed.required(Self.clientID)
        do {
            appID = try AppID(parsed.required(Self.appID))
        } catch {
            throw UsageError(message: "--app-id: \(error.reason)")
        }
        state = parsed.required(Self.state)
        connections = try parsed.integer(Self.connections, in: 1...1024) ?? 16
        seconds = try parsed.decimal(Self.seconds, atLeast: 0.001) ?? 5
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("attest-load: \(message)\n".utf8))
    exit(ExitCode.failure)
}

/// What a step answered, or its failure thrown (the closed loop counts it as an error).
func answered<Answer>(_ answer: Answer?, _ log: DeviceLog) throws(StepFailure) -> Answer {
    guard let answer else { throw log.lastFailure ?? .simulator("no answer recorded") }
    return answer
}

let plan = CommandLineEntry.parse(program: "attest-load", usage: LoadPlan.usage, arguments: Array(CommandLine.arguments.dropFirst())) {
    arguments throws(UsageError) in try LoadPlan(arguments)
}
let pki: SyntheticPKI
do {
    pki = try SimulatorState(directory: plan.state).read()
} catch {
    fail(error.description)
}
let flow = DeviceFlow(
    clientID: plan.clientID, appID: plan.appID, environment: .production, pki: pki, now: { Int64(Date().timeIntervalSince1970) })
let connections = plan.connections
let seconds = plan.seconds
let port = plan.port

do {
    switch plan.mode {
    case .token:
        var connection = Connection(port: port, receiveTimeoutSeconds: LoadPlan.receiveTimeoutSeconds)
        var log = DeviceLog()
        print(try answered(flow.register(try SyntheticDevice(), &connection, &log), log))
    case .challenge:
        ClosedLoop.run(connections: connections, seconds: seconds, ports: plan.ports) { connection, _ in
            var log = DeviceLog()
            _ = try answered(flow.challenge(&connection, &log), log)
            return 1
        }.report(mode: plan.mode.rawValue, connections: connections)
    case .attest:
        // Enough objects for the whole run (2,000 per second is above what one core verifies),
        // each with its own fresh challenge, prepared before the clock starts: each costs the
        // client a P-384 signature, which is not the server's work.
        let perSlice = Int(seconds * 2_000) / 8
        let prepared = Mutex<[DeviceRequest]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            var connection = Connection(port: port, receiveTimeoutSeconds: LoadPlan.receiveTimeoutSeconds)
            var requests: [DeviceRequest] = []
            for _ in 0..<perSlice {
                var log = DeviceLog()
                guard let device = try? SyntheticDevice(), let issued = flow.challenge(&connection, &log),
                    let request = try? flow.attestRequest(device, answering: issued)
                else { continue }
                requests.append(request)
            }
            prepared.withLock { $0 += requests }
        }
        let requests = prepared.withLock { $0 }
        let next = Atomic<Int>(0)
        ClosedLoop.run(connections: connections, seconds: seconds, ports: plan.ports) { connection, _ in
            let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < requests.count else { throw StepFailure.simulator("prepared attestations ran out") }
            var log = DeviceLog()
            _ = try answered(flow.attest(requests[index], &connection, &log), log)
            return 1
        }.report(mode: plan.mode.rawValue, connections: connections)
    case .refresh:
        // One registered device per connection, attested before the clock starts.
        let devices = Mutex<[Int: SyntheticDevice]>([:])
        for index in 0..<connections {
            var connection = Connection(port: plan.ports[index % plan.ports.count], receiveTimeoutSeconds: LoadPlan.receiveTimeoutSeconds)
            var log = DeviceLog()
            let device = try SyntheticDevice()
            _ = try answered(flow.register(device, &connection, &log), log)
            devices.withLock { $0[index] = device }
        }
        ClosedLoop.run(connections: connections, seconds: seconds, ports: plan.ports) { connection, thread in
            guard var device = devices.withLock({ $0[thread] }) else { throw StepFailure.simulator("no device") }
            var log = DeviceLog()
            let token = flow.refresh(&device, &connection, &log)
            devices.withLock { $0[thread] = device }
            _ = try answered(token, log)
            return 2
        }.report(mode: plan.mode.rawValue, connections: connections)
    case .trace:
        Trace.run(flow: flow, ports: plan.ports, devices: connections, seconds: seconds)
    case .raceChallenge, .raceCounter:
        let tally =
            plan.mode == .raceChallenge
            ? try Race.challenge(flow: flow, ports: plan.ports, count: connections)
            : try Race.counter(flow: flow, ports: plan.ports, count: connections)
        print(JSONText.render(.object(tally.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })))
    }
} catch {
    fail("\(error)")
}
