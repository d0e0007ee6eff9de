import AttestCore
import AttestOptions
import AttestService
import AttestSimulator
import Foundation
import Glibc

/// `attestctl simulate`: synthetic devices against a running attestd that trusts the simulator's
/// root, or (`--write-trust-anchor`) that root written out for `attestd --trust-anchor`.
enum SimulateCommand {
    static let maximumConcurrency = 64
    /// Devices at once by default: under attestd's default cap of 32 connections per client
    /// address, since every simulated device comes from one address.
    static let defaultConcurrency = 16

    static let url = OptionSpec(
        "url", value: "URL", help: "(required for a run) attestd to load: http://IP:PORT, IPv4 or [IPv6] literal, plain HTTP")
    static let clientID = OptionSpec("client-id", value: "ID", help: "(required for a run) client ID of an integration for the app below")
    static let teamID = OptionSpec(
        "team-id", value: "T", help: "(required for a run) Apple Developer Team ID the devices claim (10 of A-Z 0-9)")
    static let bundleID = OptionSpec("bundle-id", value: "B", help: "(required for a run) bundle ID the devices claim")
    static let devices = OptionSpec("devices", value: "N", help: "(required for a run) how many devices to simulate (1 to 1000000)")
    static let refreshes = OptionSpec(
        "refreshes", value: "K", help: "token refreshes per device after the attestation (0 to 10000; default 1)")
    static let concurrency = OptionSpec(
        "concurrency", value: "C",
        help:
            "devices running at once, one thread each (1 to 64; default min(N, 16), under attestd's default cap of 32 connections per address)"
    )
    static let environment = OptionSpec(
        "environment", value: "production|development", help: "App Attest environment (aaguid) of the devices (default production)")
    static let state = OptionSpec(
        "state", value: "DIR",
        help: "directory of the simulator's test PKI, created on first use (default ./\(SimulatorState.defaultDirectory))")
    static let writeTrustAnchor = OptionSpec(
        "write-trust-anchor", value: "FILE", help: "write the simulator's root certificate (PEM) to FILE and stop")

    static let command = Command(
        path: ["simulate"],
        summary:
            "Run synthetic devices against a running attestd that trusts the simulator's root (--write-trust-anchor); "
            + "print counts, throughput and latency per step, exit 1 if any failed.",
        options: [url, clientID, teamID, bundleID, devices, refreshes, concurrency, environment, tokensFile, state, writeTrustAnchor],
        run: run)

    /// The options of a run, which --write-trust-anchor does not take.
    static let runOptions = [url, clientID, teamID, bundleID, devices, refreshes, concurrency, environment, tokensFile]
    /// Where to write each device's last access token, one a line (checks that revoke and retry them).
    static let tokensFile = OptionSpec(
        "tokens-file", value: "FILE", help: "write each device's last access token to FILE, one a line (tests: revoke, then retry)")
    /// The options a run cannot do without.
    static let requiredForRun = [url, clientID, teamID, bundleID, devices]

    static func run(_ options: ParsedOptions, _ io: ToolIO) throws(UsageError) -> Int32 {
        let state = SimulatorState(directory: options.value(Self.state) ?? SimulatorState.defaultDirectory)
        if let file = options.value(Self.writeTrustAnchor) {
            let extra = runOptions.filter { options.value($0) != nil }.map(\.name)
            guard extra.isEmpty else {
                throw UsageError(message: "--write-trust-anchor takes only --state, not --\(extra.joined(separator: ", --"))")
            }
            return writeAnchor(to: file, state: state, io)
        }
        let plan = try plan(options)
        let pki: SyntheticPKI
        do {
            let loaded = try state.load(now: io.now())
            if let note = loaded.note { io.standardError("attestctl simulate: \(note)\n") }
            pki = loaded.pki
        } catch {
            io.standardError("attestctl simulate: \(error.description)\n")
            return ExitCode.failure
        }
        io.standardOutput(
            "simulating \(plan.devices) \(plan.environment.rawValue) devices, \(plan.refreshes) refreshes each, "
                + "against \(plan.url) as \(plan.clientID) (\(plan.appID))\n")
        let result = DeviceSimulator(plan: plan, pki: pki, now: io.now).run()
        io.standardOutput(SimulationReport(plan: plan, result: result).text)
        if let file = options.value(tokensFile) {
            do {
                try Data(result.lastTokens.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: file))
            } catch {
                io.standardError("attestctl simulate: cannot write the tokens to \(file): \(error)\n")
                return ExitCode.failure
            }
        }
        return result.failed ? ExitCode.failure : ExitCode.success
    }

    static func writeAnchor(to file: String, state: SimulatorState, _ io: ToolIO) -> Int32 {
        do {
            let loaded = try state.load(now: io.now())
            if let note = loaded.note { io.standardError("attestctl simulate: \(note)\n") }
            try Data(loaded.pki.root.pem.utf8).write(to: URL(fileURLWithPath: file))
        } catch {
            io.standardError("attestctl simulate: cannot write the trust anchor to \(file): \(error)\n")
            return ExitCode.failure
        }
        io.standardOutput(
            "wrote the simulator's root (from \(state.directory)) to \(file); start attestd with --trust-anchor \(file) "
                + "(tests and demos only)\n")
        return ExitCode.success
    }

    /// Validates the run options into a plan; every problem is a usage error (exit 64).
    static func plan(_ options: ParsedOptions) throws(UsageError) -> SimulationPlan {
        func given(_ spec: OptionSpec) throws(UsageError) -> String {
            guard let value = options.value(spec) else {
                throw UsageError(message: "missing --\(spec.name) (or use --write-trust-anchor FILE)")
            }
            return value
        }
        // Every missing option is reported before any value is judged.
        for spec in requiredForRun { _ = try given(spec) }
        let (host, port) = try address(given(url))
        let clientID = try given(Self.clientID)
        guard ClientID(clientID) != nil else {
            throw UsageError(message: "--client-id takes a client ID: clid_ and 32 lower-case hex digits, as integration create prints it")
        }
        let (team, bundle) = (try given(teamID), try given(bundleID))
        let appID: AppID
        do {
            appID = try AppID(teamID: team, bundleID: bundle)
        } catch {
            throw UsageError(message: "--team-id/--bundle-id: \(error.reason)")
        }
        let environment =
            try options.choice(Self.environment, among: ["production": AppAttestEnvironment.production, "development": .development])
            ?? .production
        let devices = try Self.devices.integer(given(Self.devices), in: 1...1_000_000)
        let refreshes = try options.integer(Self.refreshes, in: 0...10_000) ?? 1
        let concurrency = try options.integer(Self.concurrency, in: 1...maximumConcurrency) ?? defaultConcurrency
        return SimulationPlan(
            host: host, port: port, clientID: clientID, appID: appID, environment: environment, devices: devices, refreshes: refreshes,
            concurrency: min(devices, concurrency))
    }

    /// `http://IPv4:PORT` or `http://[IPv6]:PORT`, optionally with a final `/`. The simulator speaks
    /// plain HTTP over its own sockets and resolves no names, so anything else is refused up front.
    static func address(_ url: String) throws(UsageError) -> (host: String, port: UInt16) {
        let refusal = UsageError(
            message: "--url takes http://IP:PORT with an IPv4 or [IPv6] literal (plain HTTP, no host name, path or TLS), not '\(url)'")
        guard url.hasPrefix("http://") else { throw refusal }
        var rest = Substring(url.dropFirst("http://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let host: Substring
        let portText: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]"), rest[close...].hasPrefix("]:") else { throw refusal }
            host = rest[rest.index(after: rest.startIndex)..<close]
            portText = rest[rest.index(close, offsetBy: 2)...]
            var address = in6_addr()
            guard inet_pton(AF_INET6, String(host), &address) == 1 else { throw refusal }
        } else {
            guard let colon = rest.lastIndex(of: ":") else { throw refusal }
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
            var address = in_addr()
            guard inet_pton(AF_INET, String(host), &address) == 1 else { throw refusal }
        }
        guard !portText.isEmpty, portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let port = UInt16(portText), port > 0 else {
            throw refusal
        }
        return (String(host), port)
    }
}

/// The text `attestctl simulate` prints after a run.
struct SimulationReport {
    let plan: SimulationPlan
    let result: SimulationResult

    var text: String {
        let seconds = max(Self.seconds(result.elapsed), 1e-9)
        var lines = [
            Self.row(["step", "ok", "failed", "ops/s", "p50 ms", "p90 ms", "p99 ms", "max ms"])
        ]
        for step in SimulationStep.allCases {
            let outcomes = result.outcomes.filter { $0.step == step }
            let failed = outcomes.filter { $0.failure != nil }.count
            // Latency of the requests that succeeded: a fast refusal would flatter the percentiles.
            let latencies = outcomes.filter { $0.failure == nil }.map { Self.seconds($0.duration) * 1000 }.sorted()
            let percentiles = [50.0, 90.0, 99.0, 100.0].map { Self.percentile($0, of: latencies).map { Self.format($0, 1) } ?? "-" }
            lines.append(
                Self.row(
                    [step.rawValue, String(outcomes.count - failed), String(failed), Self.format(Double(outcomes.count) / seconds, 1)]
                        + percentiles))
        }
        let requests = result.outcomes.filter { $0.failure?.code != "simulator" }.count
        lines.append(
            "\(requests) requests in \(Self.format(seconds, 2)) s (\(Self.format(Double(requests) / seconds, 1)) requests/s, "
                + "\(result.threads) threads); \(result.completedDevices) of \(plan.devices) devices succeeded at every step")
        let failures = Dictionary(grouping: result.outcomes.compactMap { outcome in outcome.failure.map { (outcome.step, $0) } }) {
            FailureKey(step: $0.0, failure: $0.1)
        }
        if !failures.isEmpty {
            lines.append("failures:")
            let order = SimulationStep.allCases
            for (key, list) in failures.sorted(by: {
                (order.firstIndex(of: $0.key.step) ?? 0, $1.value.count) < (order.firstIndex(of: $1.key.step) ?? 0, $0.value.count)
            }) {
                let status = key.failure.status.map { "HTTP \($0)" } ?? "no answer"
                lines.append(
                    "  \(key.step.rawValue): \(list.count) x \(status) code=\(key.failure.code) reason=\(key.failure.reason)")
            }
            lines += hints(Set(failures.keys.map(\.failure)))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A pointer to the usual cause of the failures a first run meets.
    private func hints(_ failures: Set<StepFailure>) -> [String] {
        var hints: [String] = []
        let cap =
            "every simulated device comes from one address, so run fewer at once (--concurrency, now \(plan.concurrency)) "
            + "or start attestd with --connections-per-address 0"
        if failures.contains(where: { $0.code == "too_many_connections" }) {
            hints.append(
                "hint: attestd refused connections over its cap per client address (--connections-per-address, default 32): " + cap)
        }
        if failures.contains(where: { $0.code == "transport" }) {
            hints.append(
                "hint: is attestd listening on \(plan.url)? If some devices succeeded, attestd may have closed connections past "
                    + "twice its cap per client address (--connections-per-address, default 32): " + cap)
        }
        if failures.contains(where: { $0.reason.hasPrefix("chain_invalid") }) {
            hints.append(
                "hint: attestd must trust this simulator's root: attestctl simulate --write-trust-anchor FILE [--state DIR], "
                    + "then restart attestd with --trust-anchor FILE")
        }
        if failures.contains(where: { $0.code == "rate_limited" }) {
            hints.append("hint: every simulated device comes from one address; for load runs start attestd with --address-rate 0")
        }
        return hints
    }

    private struct FailureKey: Hashable {
        let step: SimulationStep
        let failure: StepFailure
    }

    static func row(_ cells: [String]) -> String {
        cells[0].padding(toLength: 10, withPad: " ", startingAt: 0)
            + cells.dropFirst().map { String(repeating: " ", count: max(0, 9 - $0.count)) + $0 }.joined(separator: " ")
    }

    /// Nearest-rank percentile of sorted values.
    static func percentile(_ p: Double, of sorted: [Double]) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func format(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }
}
