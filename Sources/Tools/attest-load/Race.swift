import AttestSimulator
import Foundation
import Synchronization

/// The cross-node races of scripts/check cluster: many requests that only one may win, sent at
/// once and spread over several attestd nodes (`--port P1,P2,...`). Prints one JSON object:
/// how many succeeded and, for the others, how many got each `status code/reason`.
enum Race {
    /// One challenge (issued by the first node), `count` different devices attesting with it.
    static func challenge(flow: DeviceFlow, ports: [UInt16], count: Int) throws -> [String: Int] {
        var connection = Connection(port: ports[0])
        var log = DeviceLog()
        guard let issued = flow.challenge(&connection, &log) else { throw log.lastFailure ?? .simulator("no challenge") }
        var requests: [DeviceRequest] = []
        for _ in 0..<count { requests.append(try flow.attestRequest(try SyntheticDevice(), answering: issued)) }
        return send(requests, ports: ports, step: .attest)
    }

    /// One registered device and `count` fresh challenges (each from the next node), every
    /// assertion carrying the same counter: one may advance it.
    static func counter(flow: DeviceFlow, ports: [UInt16], count: Int) throws -> [String: Int] {
        var device = try SyntheticDevice()
        var connection = Connection(port: ports[0])
        var log = DeviceLog()
        guard flow.register(device, &connection, &log) != nil else { throw log.lastFailure ?? .simulator("registration failed") }
        var requests: [DeviceRequest] = []
        for index in 0..<count {
            var node = Connection(port: ports[index % ports.count])
            guard let issued = flow.challenge(&node, &log) else { throw log.lastFailure ?? .simulator("no challenge") }
            let assertion = try device.assertion(clientData: issued.bytes, appID: flow.appID, counter: 1)
            requests.append(flow.refreshRequest(device, assertion: assertion, answering: issued))
        }
        return send(requests, ports: ports, step: .refresh)
    }

    /// Sends request i to node (i + 1) mod n, all at once (one thread each): with two or more
    /// nodes, the first request goes to another node than the one that issued the challenge.
    private static func send(_ requests: [DeviceRequest], ports: [UInt16], step: SimulationStep) -> [String: Int] {
        let tally = Mutex<[String: Int]>([:])
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for (index, request) in requests.enumerated() {
            group.enter()
            Thread.detachNewThread {
                var connection = Connection(port: ports[(index + 1) % ports.count])
                var log = DeviceLog()
                start.wait()
                let won = connection.perform(step, request, log: &log) { _ in () } != nil
                let key = won ? "ok" : log.lastFailure.map { "\($0.status.map(String.init) ?? "none") \($0.code)/\($0.reason)" } ?? "none"
                tally.withLock { $0[key, default: 0] += 1 }
                group.leave()
            }
        }
        for _ in requests { start.signal() }
        group.wait()
        return tally.withLock { $0 }
    }
}
