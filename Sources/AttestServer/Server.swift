package import AttestHTTP
package import AttestHTTPServer
package import AttestObservability
package import AttestService
package import AttestStorage
import Synchronization

/// A running attestd: the application and its HTTP listener.
package final class Server: Sendable {
    package let application: Application
    package let http: HTTPServer
    /// The admin listener (admin API and console); nil with `--admin-listen off`.
    package let adminHTTP: HTTPServer?
    let logger: Logger

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
        let refusals = RefusalLog(logger: logger)
        let metrics = application.metrics
        httpConfiguration.onRefusal = { address in
            metrics.recordRefusedConnection()
            refusals.record(address)
        }
        do {
            http = try HTTPServer(configuration: httpConfiguration, responder: application.router)
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
                throw Application.StartupError(description: "cannot listen on \(address.host):\(address.port) (--admin-listen): \(error)")
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
        // Started only once the server listens, and after it (so a refused start leaves no thread behind).
        application.receiptRefresher?.start()
        logger.log(
            .info, "listening",
            [
                "listen.host": .string(configuration.host), "listen.port": .int(Int(http.port)),
                "admin.listen": .string(adminHTTP.map { "\(configuration.adminListen?.host ?? ""):\($0.port)" } ?? "off"),
                "db": .string(configuration.database.redacted), "storage": .string(configuration.database.kind.rawValue),
                "version": .string(version),
            ])
    }

    /// Stops accepting, lets in-flight requests finish, closes the listener, then the store.
    package func stop() {
        adminHTTP?.stop()
        http.stop()
        application.close()
        logger.log(.info, "stopped")
    }

    /// See `Application.reloadGatewaySecrets`.
    package func reloadGatewaySecrets() { application.reloadGatewaySecrets() }
    /// See `Application.purge`.
    package func purge() { application.purge() }
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
