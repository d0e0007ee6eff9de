package import AttestHTTPServer
package import AttestObservability
package import AttestService

/// The HTTP API of attestd (docs/API.md), assembled: the routes of each audience (devices,
/// gateway, operators) under the router-wide middleware (request IDs, client addresses, metrics
/// and the log line). All decisions are the `TokenService`'s.
package enum AttestAPI {
    /// What the API needs besides the service.
    package struct Settings: Sendable {
        /// The credentials `/v1/introspect` callers present as `Authorization: Bearer`; nil
        /// refuses every introspection (401).
        package var gatewaySecrets: GatewaySecrets?
        /// False when a test or demo trust anchor replaces Apple's root (reported by /healthz).
        package var trustsAppleRoot: Bool
        /// SHA-256 (hex) of each trust anchor, the primary first (reported by /healthz).
        package var trustAnchorFingerprints: [String] = []
        /// Each trusted root as `/healthz` describes it: fingerprint, role, whether it is Apple's, subject.
        package var trustedRoots: [TrustedRoot] = []
        /// False when `--apple-receipt-url` replaces Apple's receipt hosts (reported by /healthz).
        package var exchangesReceiptsWithApple = true
        package var version: String
        /// The build's schema, the newest migration it knows (`/healthz`).
        package var schema = 0
        /// The commit a release build was made from (`/healthz`; empty for a development build).
        package var commit = ""
        /// The storage kind reported by /healthz and /readyz (`sqlite` or `postgresql`).
        package var storage: String
        /// Set only in `--insecure-test-mode`: enables the /test/ routes.
        package var testClock: SettableWallClock?
        /// Proxies (CIDR) whose `X-Forwarded-For` names the client (`--trusted-proxy`).
        package var trustedProxies: [String]
        /// The admin listener's (`--admin-trusted-proxy`).
        package var adminTrustedProxies: [String] = []
        /// Whether challenges and attestations are limited per client address (`--address-rate` > 0).
        package var limitsPerAddress: Bool
        /// One in N successful authorize and introspect lines is logged (1: all, 0: none).
        package var logSuccessEvery = 1
        /// How long authorize and introspect wait for their lookup (which holds no worker) before
        /// they answer 503 `storage_unavailable` with `Retry-After`.
        package var lookupDeadline = Duration.seconds(5)
        /// The most offload threads (`RouteAnswer.offload`): handlers waiting for the store at once (`--store-threads`).
        package var offloadThreads = 8

        package init(
            gatewaySecrets: GatewaySecrets?, trustsAppleRoot: Bool, version: String, storage: String = "sqlite",
            testClock: SettableWallClock? = nil, trustedProxies: [String] = [], limitsPerAddress: Bool = true, logSuccessEvery: Int = 1,
            exchangesReceiptsWithApple: Bool = true
        ) {
            self.gatewaySecrets = gatewaySecrets
            self.trustsAppleRoot = trustsAppleRoot
            self.version = version
            self.storage = storage
            self.testClock = testClock
            self.trustedProxies = trustedProxies
            self.limitsPerAddress = limitsPerAddress
            self.logSuccessEvery = logSuccessEvery
            self.exchangesReceiptsWithApple = exchangesReceiptsWithApple
        }
    }

    /// The answer to a request on a connection over `--connections-per-address` (the HTTP server
    /// sends it with `Connection: close`): 503 `too_many_connections`, `Retry-After: 1`, as nginx's
    /// `limit_conn` answers 503.
    package static let overConnectionCapResponse = Problem(
        .tooManyConnections, .connectionsPerAddress,
        "this client address holds its whole share of connections (--connections-per-address); retry after closing one",
        headers: [HTTPHeader(name: "Retry-After", value: "1")]
    ).response

    /// The router of the admin listener: the admin API (`/admin/v1/`) and the console
    /// (`/console/`), never served on the device-facing listener.
    package static func adminRouter(admin: WorkspaceAdmin, settings: Settings, logger: Logger, metrics: Metrics) -> Router {
        let builder = RouterBuilder()
        AdminRoutes(admin: admin).register(in: builder.root)
        ConsoleRoutes(admin: admin).register(in: builder.root)
        return builder.router(middleware: [
            RequestIDs(trustedProxies: settings.adminTrustedProxies),
            ClientAddresses(trustedProxies: settings.adminTrustedProxies, limitsPerAddress: false, logger: logger),
            ObservedRequests(metrics: metrics, logger: logger, logSuccessEvery: 1, sampledRoutes: []),
            AdminHeaders(),
        ])
    }

    /// The router of the device-facing API.
    package static func router(
        service: TokenService, settings: Settings, logger: Logger, metrics: Metrics,
        gauges: @escaping @Sendable () -> [(name: String, help: String, value: Int)] = { [] },
        moreMetrics: @escaping @Sendable () -> String = { "" }
    ) -> Router {
        let builder = RouterBuilder()
        DeviceRoutes(service: service, acceptsSeededChallenges: settings.testClock != nil).register(in: builder.root)
        GatewayRoutes(service: service, secrets: settings.gatewaySecrets).register(in: builder.root)
        OperatorRoutes(service: service, settings: settings, logger: logger, metrics: metrics, gauges: gauges, moreMetrics: moreMetrics)
            .register(in: builder.root)
        return builder.router(
            middleware: [
                RequestIDs(trustedProxies: settings.trustedProxies),
                ClientAddresses(trustedProxies: settings.trustedProxies, limitsPerAddress: settings.limitsPerAddress, logger: logger),
                ObservedRequests(
                    metrics: metrics, logger: logger, logSuccessEvery: settings.logSuccessEvery, sampledRoutes: ["authorize", "introspect"]),
            ],
            answerDeadline: settings.lookupDeadline, offloadThreads: settings.offloadThreads)
    }
}

/// A root attestations may chain to, as operators see it (`/healthz`, `attestd_trust_anchor_info`).
package struct TrustedRoot: Sendable, Equatable {
    package let sha256: String
    /// `primary` (`--trust-anchor`, or Apple's by default) or `additional` (`--additional-root`).
    package let role: String
    /// Whether it is Apple's App Attestation Root CA (by fingerprint).
    package let apple: Bool
    package let subject: String

    package init(sha256: String, role: String, apple: Bool, subject: String) {
        (self.sha256, self.role, self.apple, self.subject) = (sha256, role, apple, subject)
    }
}
