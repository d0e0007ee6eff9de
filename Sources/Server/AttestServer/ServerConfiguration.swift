import AttestHTTP
import AttestHTTPServer
package import AttestObservability
package import AttestOptions
package import AttestService
package import AttestStorage
import Foundation

/// A listener's address: an IP literal and a port (0 picks a free one).
package struct ListenAddress: Sendable, Equatable {
    package var host: String
    package var port: UInt16

    package init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }
}

/// attestd's settings, from flags with `ATTESTD_*` environment fallbacks (flags win).
package struct ServerConfiguration: Sendable, Equatable {
    package var host = "127.0.0.1"
    package var port: UInt16 = 8080
    /// The admin listener (the admin API and the console): `--admin-listen`, 127.0.0.1:8081 by
    /// default; nil (`off`) starts none. Never the device-facing listener, so a proxy that exposes
    /// the device API does not expose administration.
    package var adminListen: ListenAddress? = ListenAddress(host: "127.0.0.1", port: 8081)
    /// The store: a SQLite file (default ./attestd.sqlite) or a PostgreSQL URI.
    package var database = StoreLocation.sqlite(path: "attestd.sqlite")
    package var gatewaySecretFile: String?
    package var trustAnchorFile: String?
    /// A root trusted beside the primary one (`--additional-root`): Apple's next root, added
    /// before a rotation; devices attested under either keep refreshing.
    package var additionalRootFile: String?
    /// `--threads`; nil means the default of `workerThreads`.
    package var threads: Int?
    /// TEST MODE: an injectable clock and seeded challenges, for replaying recorded devices.
    /// Only from the command line (no environment variable), and only on a loopback address.
    package var insecureTestMode = false
    /// `--check-config`: read what a start would read, say what is wrong, and exit.
    package var checkOnly = false
    /// `--device-unblock on`: workspace admins may unblock their devices (attestctl always may).
    package var deviceUnblock = false

    /// HTTP worker threads: `--threads`, or by default four times the number of cores (the
    /// measurements behind the default are in docs/BENCHMARKS.md).
    package var workerThreads: Int { threads ?? 4 * HTTPServer.Configuration.activeCoreCount }
    /// Write waiters, which run every request's store work off the HTTP workers, and on
    /// PostgreSQL the pool's connections, one per waiter: as many as the workers, at least four,
    /// so that with fewer workers some waiters verify while another waits for its flush
    /// (decision 0005; measured in docs/BENCHMARKS.md).
    package var storeThreads: Int { max(4, workerThreads) }
    /// Open connections allowed from one client address (0 = no cap): keeps one slow or
    /// hostile client from holding every connection. Behind a proxy, all come from the proxy.
    /// 32 of 4,096; connections over it are answered 503 and closed, and one address is held to twice
    /// it (64) while those answers wait for a request: it takes 64 addresses to fill the server.
    package var connectionsPerAddress: UInt32 = 32
    /// Seconds a request's headers and body may take in all (408 past it; 0 = no deadline).
    package var requestDeadlineSeconds = 10
    /// Seconds between purges of expired challenges and tokens.
    package var purgeIntervalSeconds = 60
    /// A console session unused this long ends (within its 8 hours).
    package var consoleIdleSeconds = 1800
    /// How long a request waits for another writer (attestctl, a backup) before answering 503.
    package var busyTimeoutMilliseconds = 2000
    package var attestPerIntegration = ServicePolicy().attestPerIntegration
    package var challengePerIntegration = ServicePolicy().challengePerIntegration
    package var perAddress = ServicePolicy().perAddress
    /// Proxies whose `X-Forwarded-For` names the client address (`--trusted-proxy`, CIDR).
    package var trustedProxies: [String] = []
    /// The admin listener's trusted proxies (`--admin-trusted-proxy`): only their forwarded
    /// address, scheme and request ID are believed there (review L9).
    package var adminTrustedProxies: [String] = []
    /// Log lines below this level are not written.
    package var logLevel = LogLevel.info
    /// Settings re-read on SIGHUP (`--config`): the log level; what it sets wins over `--log-level`.
    package var configFile: String?
    /// One in N successful authorize and introspect lines is logged (1: all, 0: none); failures always are.
    package var logSuccessEvery = 1
    /// The 64-hex-digit key that seals integrations' DeviceCheck keys; the receipt refresher runs only with it.
    package var secretsKeyFile: String?
    /// Where receipts are exchanged instead of Apple's hosts (tests: a fake Apple on loopback).
    package var appleReceiptURL: String?
    /// Seconds between receipt refresh passes (0: no refresher).
    package var receiptRefreshIntervalSeconds = 300
    /// Whether `--db` was given on the command line with a password in its URI, where every
    /// local user can read it (`ps`): attestd warns at start.
    package var databasePasswordOnCommandLine = false

    /// The defaults (127.0.0.1:8080, ./attestd.sqlite, Apple's root, no gateway secret).
    package init() {}

    /// A usage error: printed with the usage text; exit 64.
    package typealias UsageError = AttestOptions.UsageError

    /// One option: its flag, environment variable and help, and what its value sets. Adding an
    /// option is adding one entry to `settings`; parsing and help are made from that list.
    struct Setting: Sendable {
        let spec: OptionSpec
        /// Validates the option's text (the spec words the refusal) into the configuration.
        let parse: @Sendable (inout ServerConfiguration, String, OptionSpec) throws(UsageError) -> Void

        init(
            _ name: String, environment: String?, value: String, help: String,
            apply: @escaping @Sendable (inout ServerConfiguration, String, OptionSpec) throws(UsageError) -> Void
        ) {
            spec = OptionSpec(name, value: value, help: help, environment: environment)
            parse = apply
        }

        func apply(_ configuration: inout ServerConfiguration, _ text: String) throws(UsageError) {
            try parse(&configuration, text, spec)
        }

        /// A value-less switch, command line only.
        init(flag name: String, help: String, apply: @escaping @Sendable (inout ServerConfiguration) throws(UsageError) -> Void) {
            spec = OptionSpec(flag: name, help: help)
            parse = { configuration, _, _ throws(UsageError) in try apply(&configuration) }
        }
    }

    /// `HOST:PORT` of `--name` (an IP literal host, `[::1]` for IPv6; port 0 picks a free one).
    static func address(_ text: String, _ name: String) throws(UsageError) -> (host: String, port: UInt16) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw UsageError(
                message: "--\(name) takes HOST:PORT with an IP literal host and a port from 1 to 65535 (0 picks a free one), not '\(text)'")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw UsageError(message: "--\(name) needs a host") }
        return (host, port)
    }

    /// Every option, applied in this order (`--insecure-test-mode` checks the host `--listen` set).
    static let settings: [Setting] = [
        Setting(
            "listen", environment: "ATTESTD_LISTEN", value: "HOST:PORT",
            help: "address to serve on (default 127.0.0.1:8080; port 0 picks a free port)"
        ) { configuration, listen, _ throws(UsageError) in
            (configuration.host, configuration.port) = try address(listen, "listen")
        },
        Setting(
            "admin-listen", environment: "ATTESTD_ADMIN_LISTEN", value: "HOST:PORT|off",
            help: "address of the admin API and console, never the device-facing one (default 127.0.0.1:8081; off: none)"
        ) { configuration, text, _ throws(UsageError) in
            if text == "off" {
                configuration.adminListen = nil
            } else {
                let (host, port) = try address(text, "admin-listen")
                configuration.adminListen = ListenAddress(host: host, port: port)
            }
        },
        Setting(
            "db", environment: "ATTESTD_DB", value: "PATH|URI",
            help:
                "SQLite database file, created if missing (default ./attestd.sqlite), or a PostgreSQL URI postgresql://USER@HOST:PORT/DB"
        ) { configuration, value, _ throws(UsageError) in
            guard let location = try? StoreLocation(value) else {
                throw UsageError(message: "--db needs a file path or a postgresql:// URI")
            }
            configuration.database = location
        },
        Setting(
            "gateway-secret-file", environment: "ATTESTD_GATEWAY_SECRET_FILE", value: "FILE",
            help: "credential /v1/introspect callers present (without it introspection answers 401)"
        ) { configuration, value, _ in configuration.gatewaySecretFile = value },
        // Why command line only: a stray ATTESTD_TRUST_ANCHOR in a unit file or an environment
        // would silently replace Apple's root in production; a flag shows in `ps` and the unit's ExecStart.
        Setting(
            "trust-anchor", environment: nil, value: "PEM",
            help: "TESTS AND DEMOS ONLY: trust this root instead of Apple's App Attestation root"
        ) { configuration, value, _ in configuration.trustAnchorFile = value },
        // Command line only, as --trust-anchor: whom attestd trusts shows in `ps` and ExecStart.
        Setting(
            "additional-root", environment: nil, value: "PEM",
            help: "also trust this root beside the primary one, for Apple's next App Attestation root ahead of a rotation"
        ) { configuration, value, _ in configuration.additionalRootFile = value },
        Setting(
            "threads", environment: "ATTESTD_THREADS", value: "N", help: "HTTP worker threads (default 4 x cores)"
        ) { configuration, text, spec throws(UsageError) in configuration.threads = try spec.integer(text, in: 1...256) },
        whole(
            "busy-timeout-ms", environment: "ATTESTD_BUSY_TIMEOUT_MS", value: "MS",
            help: "wait this long for another database writer before answering 503 (default 2000)", in: 0...60_000,
            \.busyTimeoutMilliseconds),
        whole(
            "purge-interval", environment: "ATTESTD_PURGE_INTERVAL", value: "SECONDS",
            help: "delete expired challenges and tokens this often (default 60)", in: 1...86_400, unit: " seconds",
            \.purgeIntervalSeconds),
        whole(
            "console-idle-timeout", environment: "ATTESTD_CONSOLE_IDLE_TIMEOUT", value: "SECONDS",
            help: "end a console session unused this long (default 1800; at most 28800, the session's 8 hours)", in: 60...28_800,
            unit: " seconds", \.consoleIdleSeconds),
        Setting(
            "connections-per-address", environment: "ATTESTD_CONNECTIONS_PER_ADDRESS", value: "N",
            help: "open connections allowed from one client address, of 4096 in all (default 32; 0 = no cap; raise it behind a proxy)"
        ) { configuration, text, spec throws(UsageError) in configuration.connectionsPerAddress = try spec.integer(text, in: 0...4096) },
        whole(
            "request-deadline", environment: "ATTESTD_REQUEST_DEADLINE", value: "SECONDS",
            help: "a request's headers and body must arrive within this many seconds, however they trickle (default 10; 0 = none)",
            in: 0...300, unit: " seconds", \.requestDeadlineSeconds),
        Setting(
            flag: "insecure-test-mode",
            help: "NEVER IN PRODUCTION: enables POST /test/clock and /test/challenge to replay recorded devices (loopback only)"
        ) { configuration throws(UsageError) in
            // Why loopback only: test mode lets any caller set the clock and choose challenges.
            guard ["127.0.0.1", "::1"].contains(configuration.host) else {
                throw UsageError(message: "--insecure-test-mode only listens on 127.0.0.1 or ::1")
            }
            configuration.insecureTestMode = true
        },
        rate(
            "attest-rate", environment: "ATTESTD_ATTEST_RATE",
            help: "new keys per second per integration (default 100, burst 2x; 0 = unlimited)",
            \.attestPerIntegration),
        rate(
            "challenge-rate", environment: "ATTESTD_CHALLENGE_RATE",
            help: "challenges per second per integration (default 5000, burst 2x; 0 = unlimited)", \.challengePerIntegration),
        Setting(
            "device-unblock", environment: "ATTESTD_DEVICE_UNBLOCK", value: "on|off",
            help: "whether workspace admins may unblock their blocked devices (admin API, console; default off); attestctl always may"
        ) { configuration, text, spec throws(UsageError) in
            configuration.deviceUnblock = try spec.choice(text, among: ["on": true, "off": false])
        },
        Setting(
            flag: "check-config",
            help: "read the flags, the environment and every file a start reads (--config, secrets, roots), say what is wrong, exit 0 or 1"
        ) { configuration throws(UsageError) in configuration.checkOnly = true },
        Setting(
            "config", environment: "ATTESTD_CONFIG", value: "FILE",
            help: "settings that can change while attestd runs (log-level = ...), read at start and on SIGHUP (systemctl reload)"
        ) { configuration, value, _ in configuration.configFile = value },
        Setting(
            "log-level", environment: "ATTESTD_LOG_LEVEL", value: "debug|info|warning|error",
            help: "the least severe log lines written (default info)"
        ) { configuration, text, spec throws(UsageError) in
            configuration.logLevel = try spec.choice(text, among: ["debug": .debug, "info": .info, "warning": .warning, "error": .error])
        },
        whole(
            "log-success-every", environment: "ATTESTD_LOG_SUCCESS_EVERY", value: "N",
            help: "log one in N successful /v1/authorize and /v1/introspect requests (default 1: all; 0: none); failures always",
            in: 0...1_000_000, \.logSuccessEvery),
        Setting(
            "trusted-proxy", environment: "ATTESTD_TRUSTED_PROXY", value: "CIDR[,CIDR...]",
            help: "proxies (e.g. 127.0.0.1/32) whose X-Forwarded-For gives the client address for per-address limits and logs"
        ) { configuration, text, _ throws(UsageError) in configuration.trustedProxies = try networks(text, "trusted-proxy") },
        Setting(
            "admin-trusted-proxy", environment: "ATTESTD_ADMIN_TRUSTED_PROXY", value: "CIDR[,CIDR...]",
            help: "the admin listener's proxies, whose X-Forwarded-For, -Proto and X-Request-Id it believes (default: none)"
        ) { configuration, text, _ throws(UsageError) in configuration.adminTrustedProxies = try networks(text, "admin-trusted-proxy") },
        rate(
            "address-rate", environment: "ATTESTD_ADDRESS_RATE",
            help: "challenges and attestations per second per client address (default 20, burst 2x; 0 = unlimited)", \.perAddress),
        Setting(
            "secrets-key-file", environment: "ATTESTD_SECRETS_KEY_FILE", value: "FILE",
            help: "64 hex digits (openssl rand -hex 32) sealing integrations' DeviceCheck keys; enables the receipt refresher"
        ) { configuration, value, _ in configuration.secretsKeyFile = value },
        // Why command line only, https only (plain http to loopback only): every refresh sends the
        // integration's freshly signed DeviceCheck JWT to this URL, so a stray variable in a unit
        // file or environment must not be able to send them anywhere, nor in clear (decision 0022).
        Setting(
            "apple-receipt-url", environment: nil, value: "URL",
            help:
                "TESTS ONLY: exchange receipts at URL/v1/attestationData instead of Apple's hosts (https://, or http:// to 127.0.0.1 or [::1])"
        ) { configuration, value, _ throws(UsageError) in
            guard ServerConfiguration.isAcceptableReceiptURL(value) else {
                throw UsageError(
                    message: "--apple-receipt-url takes an https:// base URL, or http:// to a loopback address (127.0.0.1, [::1]), "
                        + "with no user name or password")
            }
            configuration.appleReceiptURL = value
        },
        whole(
            "receipt-refresh-interval", environment: "ATTESTD_RECEIPT_REFRESH_INTERVAL", value: "SECONDS",
            help: "exchange due device receipts with Apple this often (default 300; 0 = never)", in: 0...86_400, unit: " seconds",
            \.receiptRefreshIntervalSeconds),
    ]

    /// Whether `value` may replace Apple's receipt hosts: `https://` to any host, or plain
    /// `http://` only to a loopback address literal (tests' fake Apple); never with user-info
    /// (`http://127.0.0.1@elsewhere/` names the host after the `@`).
    static func isAcceptableReceiptURL(_ value: String) -> Bool {
        let lower = value.lowercased()
        let scheme: String
        if lower.hasPrefix("https://") {
            scheme = "https://"
        } else if lower.hasPrefix("http://") {
            scheme = "http://"
        } else {
            return false
        }
        let authority = value.dropFirst(scheme.count).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, !authority.contains("@"), !authority.contains("\\") else { return false }
        guard scheme == "http://" else { return true }
        let host: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return false }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || (after.hasPrefix(":") && after.dropFirst().allSatisfy(\.isNumber)) else { return false }
            return host == "::1"
        }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, parts.count == 1 || parts[1].allSatisfy(\.isNumber) else { return false }
        host = parts[0]
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil && $0.allSatisfy(\.isNumber) }
    }

    /// A whole-number option within `range` (`unit` follows the range in the refusal).
    private static func whole(
        _ name: String, environment: String, value: String, help: String, in range: ClosedRange<Int>, unit: String = "",
        _ keyPath: any WritableKeyPath<ServerConfiguration, Int> & Sendable
    ) -> Setting {
        Setting(name, environment: environment, value: value, help: help) { configuration, text, spec throws(UsageError) in
            configuration[keyPath: keyPath] = try spec.integer(text, in: range, unit: unit)
        }
    }

    /// A comma-separated list of CIDR networks (`--trusted-proxy`, `--admin-trusted-proxy`).
    private static func networks(_ text: String, _ flag: String) throws(UsageError) -> [String] {
        let networks = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !networks.isEmpty, networks.allSatisfy({ IPNetwork($0) != nil }) else {
            throw UsageError(message: "--\(flag) takes CIDR networks such as 127.0.0.1/32 or ::1/128, comma-separated")
        }
        return networks
    }

    /// A rate limit option: per second, burst twice that, 0 for unlimited.
    private static func rate(
        _ name: String, environment: String, help: String, _ keyPath: any WritableKeyPath<ServerConfiguration, RateLimit> & Sendable
    ) -> Setting {
        Setting(name, environment: environment, value: "PER_SECOND", help: help) { configuration, text, spec throws(UsageError) in
            let rate = try spec.decimal(text, atLeast: 0)
            configuration[keyPath: keyPath] = rate == 0 ? .unlimited : RateLimit(perSecond: rate, burst: rate * 2)
        }
    }

    /// The option table parsing and help are made from.
    static let options = OptionTable(settings.map(\.spec))

    /// Help text generated from the options table.
    package static var usage: String {
        let lines =
            [
                "usage: attestd [options]", "", "Serves the attestd HTTP API (docs/API.md).", "",
                "options (each also settable by its environment variable):",
            ] + options.optionsWithEnvironment
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses `arguments` (without the program name) over `environment`, then validates each
    /// value given into the configuration.
    package static func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> ServerConfiguration {
        let parsed = try options.parse(arguments, environment: environment)
        var configuration = ServerConfiguration()
        let onCommandLine = Set(
            arguments.filter { $0.hasPrefix("--") }.map { $0.dropFirst(2).split(separator: "=").first.map(String.init) ?? "" })
        for setting in settings {
            if setting.spec.isFlag {
                if parsed.flag(setting.spec) { try setting.apply(&configuration, "") }
            } else if let value = parsed.value(setting.spec) {
                do {
                    try setting.apply(&configuration, value)
                    if setting.spec.name == "db", onCommandLine.contains("db"), case .postgresql(let settings) = configuration.database {
                        configuration.databasePasswordOnCommandLine = settings.carriesPassword
                    }
                } catch {
                    // A value from the environment is refused in the variable's name: that is what the
                    // operator has to fix (a unit file's Environment=, not a flag they never typed).
                    guard !onCommandLine.contains(setting.spec.name), let variable = setting.spec.environment else { throw error }
                    throw UsageError(message: error.message.replacingOccurrences(of: "--\(setting.spec.name)", with: variable))
                }
            }
        }
        return configuration
    }
}
