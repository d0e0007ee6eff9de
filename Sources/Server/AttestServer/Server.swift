package import AttestClock
package import AttestHTTP
package import AttestHTTPServer
package import AttestObservability
import AttestOptions
package import AttestService
package import AttestStorage
import Dispatch
import Synchronization

/// A running attestd: the application and its HTTP listener.
package final class Server: Sendable {
    package let application: Application
    package let http: HTTPServer
    /// The admin listener (admin API and console); nil with `--admin-listen off`.
    package let adminHTTP: HTTPServer?
    let logger: Logger
    /// The purge's timer, once `startPurging` has run.
    private let purgeTimer = Mutex<PurgeTimer?>(nil)

    /// The router (the application's).
    package var router: Router { application.router }
    package var service: TokenService { application.service }
    package var store: any TokenStore { application.store }

    /// Opens everything and starts listening. Refuses to start on a corrupt or newer database, an
    /// unreadable secret or anchor, or an address that cannot be bound.
    package init(
        configuration: ServerConfiguration, version: String, logger: Logger, clock: any WallClock = SystemWallClock()
    ) throws(Application.StartupError) {
        self.logger = logger
        let application = try Application(configuration: configuration, version: version, logger: logger, clock: clock)
        self.application = application
        var httpConfiguration = HTTPServer.Configuration(
            host: configuration.host, port: configuration.port, perAddressConnectionLimit: configuration.connectionsPerAddress,
            requestDeadlineSeconds: UInt32(configuration.requestDeadlineSeconds))
        httpConfiguration.threads = configuration.workerThreads
        httpConfiguration.overCapResponse = AttestAPI.overConnectionCapResponse
        // A trusted proxy carries many clients: it is not capped as one (its clients' rates are
        // limited by the address it forwards).
        let proxies = configuration.trustedProxies.compactMap(IPNetwork.init)
        if !proxies.isEmpty {
            httpConfiguration.uncappedAddress = { address in proxies.contains { $0.contains(address) } }
        }
        let refusals = RefusalLog(logger: logger)
        let metrics = application.metrics
        httpConfiguration.onRefusal = { address in
            metrics.recordRefusedConnection()
            refusals.record(address)
        }
        do {
            http = try HTTPServer(configuration: httpConfiguration, responder: application.router)
            application.listener.attach(http)
        } catch {
            application.close()
            throw Application.StartupError(
                description: "cannot listen on \(configuration.host):\(configuration.port): \(error)",
                isTransient: error.code == .bindFailed)
        }
        if let address = configuration.adminListen {
            // The same server, limits and logs as the device-facing listener, on its own address.
            var adminConfiguration = httpConfiguration
            adminConfiguration.host = address.host
            adminConfiguration.port = address.port
            adminConfiguration.threads = min(httpConfiguration.threads, 4)
            do {
                adminHTTP = try HTTPServer(configuration: adminConfiguration, responder: application.adminRouter)
            } catch {
                http.stop()
                application.close()
                // Like the device port's: a port still held by a stopping process is worth a restart.
                throw Application.StartupError(
                    description: "cannot listen on \(address.host):\(address.port) (--admin-listen): \(error)",
                    isTransient: error.code == .bindFailed)
            }
        } else {
            adminHTTP = nil
        }
        if http.connectionLimit < httpConfiguration.connectionLimit {
            logger.log(
                .warning, "the open-files limit allows fewer connections than configured: raise LimitNOFILE",
                [
                    "connections.configured": .int(Int(httpConfiguration.connectionLimit)),
                    "connections.allowed": .int(Int(http.connectionLimit)),
                ])
        }
        if let address = configuration.adminListen, let warning = Self.adminExposure(address.host, configuration.adminTrustedProxies) {
            logger.log(.warning, warning, ["admin.listen": .string(address.host)])
        }
        // Started only once the server listens, and after it (so a refused start leaves no thread behind).
        application.receiptRefresher?.start()
        logger.log(
            .info, "listening",
            [
                "listen.host": .string(configuration.host), "listen.port": .int(Int(http.port)),
                "admin.listen": .string(adminHTTP.map { "\(configuration.adminListen?.host ?? ""):\($0.port)" } ?? "off"),
                "db": .string(configuration.database.redacted), "storage": .string(configuration.database.kind.rawValue),
                "version": .string(version), "schema": .int(BuildVersion.schema), "commit": .string(BuildVersion.commit),
            ])
    }

    /// What is wrong with an admin listener on `host` (review L8): off loopback with no TLS proxy
    /// trusted in front of it (`--admin-trusted-proxy`), admin keys and session cookies cross the
    /// network in the clear. Nil when it is on loopback or behind a trusted proxy.
    package static func adminExposure(_ host: String, _ trustedProxies: [String]) -> String? {
        guard !["127.0.0.1", "::1", "localhost"].contains(host), trustedProxies.isEmpty else { return nil }
        return "the admin listener is not on loopback and no TLS proxy is trusted in front of it (--admin-trusted-proxy): "
            + "admin keys and session cookies would cross the network in the clear; listen on 127.0.0.1 behind "
            + "deploy/nginx/attestd-admin.conf"
    }

    /// Stops accepting, lets in-flight requests finish, closes the listener, stops the purge
    /// (waiting up to 5 s for one under way), then closes the store: no purge writes after the
    /// store's last checkpoint.
    /// False when the store did not close cleanly (see `Application.close`): attestd then exits 1.
    @discardableResult
    package func stop() -> Bool {
        adminHTTP?.stop()
        http.stop()
        purgeTimer.withLock { $0 }?.stop(waitingAtMost: .seconds(5))
        let closed = application.close()
        logger.log(closed ? .info : .error, closed ? "stopped" : "stopped, but the database was not closed cleanly")
        return closed
    }

    /// See `Application.reload`.
    package func reload() { application.reload() }
    /// See `Application.purge`.
    package func purge() { application.purge() }

    /// Purges now and then every `seconds`, on a queue of its own (`PurgeTimer`), until `stop`.
    package func startPurging(every seconds: Int) {
        let timer = PurgeTimer(every: seconds) { [self] in purge() }
        purgeTimer.withLock { $0 = timer }
    }
    /// See `Application.refreshStatistics`.
    package func refreshStatistics() { application.refreshStatistics() }
}

/// Logs connections refused by the per-address cap: at most one line every 10 seconds, with how
/// many were refused since the last line and the last address (so a flood cannot flood the log).
final class RefusalLog: Sendable {
    private struct State {
        var lastLine: ContinuousClock.Instant?
        var since = 0
    }

    private let logger: Logger
    private let state = Mutex(State())

    init(logger: Logger) {
        self.logger = logger
    }

    func record(_ address: String) {
        let now = ContinuousClock.now
        let count: Int? = state.withLock { state in
            state.since += 1
            if let last = state.lastLine, now - last < .seconds(10) { return nil }
            defer {
                state.lastLine = now
                state.since = 0
            }
            return state.since
        }
        guard let count else { return }
        logger.log(
            .warning, "connections refused: the address holds its whole per-address share (--connections-per-address)",
            ["remote": .string(address), "refused": .int(count)])
    }
}

/// Runs a housekeeping job (the purge) now and then every interval on a serial queue of its own.
///
/// Why not the main queue: attestd's signal handlers run there, and a purge waits for the
/// database; while it waited for a database that had stopped answering, SIGTERM and SIGHUP
/// waited with it (decision 0015).
package final class PurgeTimer: Sendable {
    private let queue = DispatchQueue(label: "attestd.purge")
    private let clock: any TimerClock
    private let interval: Duration
    private let job: @Sendable () -> Void
    /// The next run's timer; nil once stopped.
    private let next = Mutex<ClockTimer?>(nil)
    private let stopped = Atomic<Bool>(false)

    /// Runs `job` now and then every `seconds` (at least 1) on `clock`.
    package init(every seconds: Int, clock: any TimerClock = SystemTimerClock(), _ job: @escaping @Sendable () -> Void) {
        self.clock = clock
        interval = .seconds(max(1, seconds))
        self.job = job
        arm(after: .zero)
    }

    /// Schedules the next run; each run schedules the one after it, `interval` after it began.
    private func arm(after delay: Duration) {
        next.withLock { next in
            guard !stopped.load(ordering: .acquiring) else { return }
            next = clock.schedule(after: delay, on: queue) { [self] in
                guard !stopped.load(ordering: .acquiring) else { return }
                arm(after: interval)
                job()
            }
        }
    }

    /// Runs the job no more, and waits for one under way to finish, at most `limit`; true when
    /// none is under way any more.
    @discardableResult
    package func stop(waitingAtMost limit: Duration) -> Bool {
        next.withLock { next in
            stopped.store(true, ordering: .releasing)
            next?.cancel()
            next = nil
        }
        let idle = DispatchSemaphore(value: 0)
        queue.async { idle.signal() }
        let nanoseconds = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
        return idle.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success
    }
}
