import AttestCore
import AttestSimulator
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

/// Everything a run observed.
struct SimulationResult: Sendable {
    let outcomes: [StepOutcome]
    let completedDevices: Int
    let elapsed: Duration
    let threads: Int
    /// Each device's last access token, for `--tokens-file`.
    var lastTokens: [String] = []

    var failed: Bool { outcomes.contains { $0.failure != nil } }
}

/// Runs the plan's devices through the device flow on plain threads with blocking sockets, at
/// most `concurrency` at once.
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
        let flow = DeviceFlow(clientID: plan.clientID, appID: plan.appID, environment: plan.environment, pki: pki, now: now)
        let threads = min(plan.devices, plan.concurrency)
        let progress = Progress()
        let finished = DispatchSemaphore(value: 0)
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<threads {
            let thread = Thread { [plan] in
                var connection = Connection(host: plan.host, port: plan.port)
                var logs: [DeviceLog] = []
                while progress.nextDevice.wrappingAdd(1, ordering: .relaxed).oldValue < plan.devices {
                    var log = DeviceLog()
                    flow.run(refreshes: plan.refreshes, &connection, &log)
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
            outcomes: logs.flatMap(\.outcomes), completedDevices: logs.filter(\.completed).count, elapsed: elapsed, threads: threads,
            lastTokens: logs.compactMap(\.lastToken))
    }
}
