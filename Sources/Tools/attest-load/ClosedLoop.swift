import AttestSimulator
import Foundation
import Synchronization

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
    /// Runs `body(connection, thread)` on `connections` threads, each with its own keep-alive
    /// connection to 127.0.0.1, thread i to `ports[i mod n]` (several nodes share the load),
    /// until `seconds` pass; each call returns how many requests it made.
    static func run(
        connections: Int, seconds: Double, ports: [UInt16], _ body: @escaping @Sendable (inout Connection, Int) throws -> Int
    ) -> LoadResult {
        let results = Mutex(LoadResult())
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        let group = DispatchGroup()
        let start = ContinuousClock.now
        for thread in 0..<connections {
            group.enter()
            Thread {
                var connection = Connection(port: ports[thread % ports.count], receiveTimeoutSeconds: LoadPlan.receiveTimeoutSeconds)
                var local = LoadResult()
                while ContinuousClock.now < deadline {
                    let began = ContinuousClock.now
                    do {
                        local.requests += try body(&connection, thread)
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
