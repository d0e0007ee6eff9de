package import AttestService
package import AttestStorage
import Foundation

/// attestd's settings, from flags with `ATTESTD_*` environment fallbacks (flags win).
package struct ServerConfiguration: Sendable, Equatable {
    package var host = "127.0.0.1"
    package var port: UInt16 = 8080
    /// The store: a SQLite file (default ./attestd.sqlite) or a PostgreSQL URI.
    package var database = StoreLocation.sqlite(path: "attestd.sqlite")
    package var gatewaySecretFile: String?
    package var trustAnchorFile: String?
    package var threads: Int?
    /// TEST MODE: an injectable clock and seeded challenges, for replaying recorded devices.
    /// Only from the command line (no environment variable), and only on a loopback address.
    package var insecureTestMode = false
    /// Open connections allowed from one client address (0 = no cap): keeps one slow or
    /// hostile client from holding every connection. Behind a proxy, all come from the proxy.
    package var connectionsPerAddress: UInt32 = 128
    /// Seconds between purges of expired challenges and tokens.
    package var purgeIntervalSeconds = 60
    /// How long a request waits for another writer (attestctl, a backup) before answering 503.
    package var busyTimeoutMilliseconds = 2000
    package var attestPerIntegration = ServicePolicy().attestPerIntegration
    package var challengePerIntegration = ServicePolicy().challengePerIntegration
    package var perAddress = ServicePolicy().perAddress

    /// The defaults (127.0.0.1:8080, ./attestd.sqlite, Apple's root, no gateway secret).
    package init() {}

    /// A usage error: printed with the usage text; exit 64.
    package struct UsageError: Error, Equatable {
        package let message: String
    }

    /// Flags, their environment variables and help, in one table (help is generated from it).
    static let options: [(flag: String, environment: String, value: String, help: String)] = [
        ("--listen", "ATTESTD_LISTEN", "HOST:PORT", "address to serve on (default 127.0.0.1:8080; port 0 picks a free port)"),
        (
            "--db", "ATTESTD_DB", "PATH|URI",
            "SQLite database file, created if missing (default ./attestd.sqlite), or a PostgreSQL URI postgresql://USER@HOST:PORT/DB"
        ),
        (
            "--gateway-secret-file", "ATTESTD_GATEWAY_SECRET_FILE", "FILE",
            "credential /v1/introspect callers present (without it introspection answers 401)"
        ),
        ("--trust-anchor", "ATTESTD_TRUST_ANCHOR", "PEM", "TESTS AND DEMOS ONLY: trust this root instead of Apple's App Attestation root"),
        ("--threads", "ATTESTD_THREADS", "N", "HTTP worker threads (default: number of cores)"),
        (
            "--busy-timeout-ms", "ATTESTD_BUSY_TIMEOUT_MS", "MS",
            "wait this long for another database writer before answering 503 (default 2000)"
        ),
        ("--purge-interval", "ATTESTD_PURGE_INTERVAL", "SECONDS", "delete expired challenges and tokens this often (default 60)"),
        (
            "--connections-per-address", "ATTESTD_CONNECTIONS_PER_ADDRESS", "N",
            "open connections allowed from one client address, of 1024 in all (default 128; 0 = no cap; raise it behind a proxy)"
        ),
        (
            "--insecure-test-mode", "", "",
            "NEVER IN PRODUCTION: enables POST /test/clock and /test/challenge to replay recorded devices (loopback only)"
        ),
        (
            "--attest-rate", "ATTESTD_ATTEST_RATE", "PER_SECOND",
            "new keys per second per integration (default 100, burst 2x; 0 = unlimited)"
        ),
        (
            "--challenge-rate", "ATTESTD_CHALLENGE_RATE", "PER_SECOND",
            "challenges per second per integration (default 5000, burst 2x; 0 = unlimited)"
        ),
        (
            "--address-rate", "ATTESTD_ADDRESS_RATE", "PER_SECOND",
            "challenges and attestations per second per client address (default 20, burst 2x; 0 = unlimited)"
        ),
    ]

    /// Help text generated from the options table.
    package static var usage: String {
        var lines = [
            "usage: attestd [options]", "", "Serves the attestd HTTP API (docs/API.md).", "",
            "options (each also settable by its environment variable):",
        ]
        for option in options {
            lines.append("  \(option.flag)" + (option.value.isEmpty ? "" : " \(option.value)"))
            lines.append("      \(option.help)" + (option.environment.isEmpty ? " [command line only]" : " [\(option.environment)]"))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses `arguments` (without the program name) over `environment`.
    package static func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> ServerConfiguration {
        var values: [String: String] = [:]
        for option in options where !option.environment.isEmpty {
            if let value = environment[option.environment] { values[option.flag] = value }
        }
        var index = 0
        var seen: Set<String> = []
        while index < arguments.count {
            var flag = arguments[index]
            var value: String?
            if let equals = flag.firstIndex(of: "=") {
                value = String(flag[flag.index(after: equals)...])
                flag = String(flag[..<equals])
            }
            guard let option = options.first(where: { $0.flag == flag }) else { throw UsageError(message: "unknown option '\(flag)'") }
            guard seen.insert(flag).inserted else { throw UsageError(message: "\(flag) is given twice") }
            if option.value.isEmpty {
                guard value == nil else { throw UsageError(message: "\(flag) takes no value") }
                value = ""
            } else if value == nil {
                index += 1
                guard index < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
                value = arguments[index]
            }
            values[flag] = value
            index += 1
        }
        var configuration = ServerConfiguration()
        if let listen = values["--listen"] {
            guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
                throw UsageError(message: "--listen takes HOST:PORT, not '\(listen)'")
            }
            var host = String(listen[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { throw UsageError(message: "--listen needs a host") }
            configuration.host = host
            configuration.port = port
        }
        if let value = values["--db"] {
            guard let location = try? StoreLocation(value) else {
                throw UsageError(message: "--db needs a file path or a postgresql:// URI")
            }
            configuration.database = location
        }
        configuration.gatewaySecretFile = values["--gateway-secret-file"]
        if values["--insecure-test-mode"] != nil {
            // Why loopback only: test mode lets any caller set the clock and choose challenges.
            guard ["127.0.0.1", "::1"].contains(configuration.host) else {
                throw UsageError(message: "--insecure-test-mode only listens on 127.0.0.1 or ::1")
            }
            configuration.insecureTestMode = true
        }
        configuration.trustAnchorFile = values["--trust-anchor"]
        if let threads = values["--threads"] {
            guard let count = Int(threads), (1...256).contains(count) else { throw UsageError(message: "--threads takes 1 to 256") }
            configuration.threads = count
        }
        if let text = values["--connections-per-address"] {
            guard let count = UInt32(text), count <= 1024 else { throw UsageError(message: "--connections-per-address takes 0 to 1024") }
            configuration.connectionsPerAddress = count
        }
        if let text = values["--purge-interval"] {
            guard let interval = Int(text), (1...86_400).contains(interval) else {
                throw UsageError(message: "--purge-interval takes 1 to 86400 seconds")
            }
            configuration.purgeIntervalSeconds = interval
        }
        if let text = values["--busy-timeout-ms"] {
            guard let milliseconds = Int(text), (0...60_000).contains(milliseconds) else {
                throw UsageError(message: "--busy-timeout-ms takes 0 to 60000")
            }
            configuration.busyTimeoutMilliseconds = milliseconds
        }
        for (flag, keyPath) in [
            ("--attest-rate", \ServerConfiguration.attestPerIntegration), ("--challenge-rate", \.challengePerIntegration),
            ("--address-rate", \.perAddress),
        ] {
            if let text = values[flag] {
                guard let rate = Double(text), rate >= 0, rate.isFinite else { throw UsageError(message: "\(flag) takes a number >= 0") }
                configuration[keyPath: keyPath] = rate == 0 ? .unlimited : RateLimit(perSecond: rate, burst: rate * 2)
            }
        }
        return configuration
    }
}
