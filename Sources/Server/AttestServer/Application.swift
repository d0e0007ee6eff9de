import AttestAppleClient
import AttestCore
package import AttestHTTP
import AttestHTTPServer
package import AttestObservability
import AttestOptions
package import AttestReceipts
package import AttestService
package import AttestStorage
import Foundation
import Synchronization

/// attestd without its listener: store, verifier, service, receipt refresher and the router,
/// wired from a configuration. The composition root: no library below it reaches for another's
/// parts. Tests call `router` without a socket; `Server` adds the listener.
package final class Application: Sendable {
    package let store: any TokenStore
    package let service: TokenService
    package let router: Router
    /// The admin API and the console, served by the admin listener only.
    package let adminRouter: Router
    /// The workspace admins' use cases behind `adminRouter`.
    package let workspaceAdmin: WorkspaceAdmin
    /// The device-facing listener's gauges; `Server` attaches the listener once it runs.
    package let listener: ListenerGauges
    package let metrics: Metrics
    /// Each integration's verifications per hour, added to the store at each purge tick.
    package let verifications: VerificationTally
    /// The gateway credentials, re-read on SIGHUP (nil without `--gateway-secret-file`).
    package let gatewaySecrets: GatewaySecrets?
    /// The gauges' values, refreshed with every purge (at start and then every purge interval).
    let statistics: StatisticsCache
    /// The receipt refresher, made when `--secrets-key-file` is given and the interval is not 0;
    /// `Server` starts it once it listens.
    package let receiptRefresher: ReceiptRefresher?
    let logger: Logger
    /// Settings re-read on SIGHUP (`--config`), if any.
    let configFile: String?
    /// The log level of the flags and environment: what a settings file without `log-level` means.
    let startLogLevel: LogLevel

    /// Why attestd refused to start (exit 1 with the message).
    package struct StartupError: Error, CustomStringConvertible {
        package let description: String
        /// Whether trying again later may succeed (the port is still held by a process that is
        /// stopping): attestd then exits 75 (EX_TEMPFAIL), which systemd restarts; a configuration
        /// error exits 1, which the unit does not restart.
        package var isTransient = false
    }

    /// Opens everything but the listener. Refuses to start on a corrupt or newer database, or an
    /// unreadable secret or anchor.
    package init(
        configuration: ServerConfiguration, version: String, logger: Logger, clock systemClock: any WallClock = SystemWallClock()
    ) throws(StartupError) {
        self.logger = logger
        configFile = configuration.configFile
        startLogLevel = configuration.logLevel
        if let file = configuration.configFile {
            try Self.applyConfigFile(file, to: logger)
        }
        let testClock = configuration.insecureTestMode ? SettableWallClock(following: systemClock) : nil
        let clock: any WallClock = testClock ?? systemClock
        if configuration.insecureTestMode {
            logger.log(
                .warning,
                "INSECURE TEST MODE: the clock can be set and challenges chosen by any local caller; never run this in production")
        }
        if configuration.databasePasswordOnCommandLine {
            logger.log(
                .warning,
                "the --db URI on the command line holds a password, which every local user can read (ps, /proc): keep it out of "
                    + "the URI, in a password file (the attestd user's ~/.pgpass, PGPASSFILE, or passfile= in the URI)",
                ["db": .string(configuration.database.redacted)])
        }
        do {
            // One PostgreSQL connection per write waiter, which run every request's store work:
            // a request never waits for another's connection.
            // A PostgreSQL server that does not answer at start is retried in the background: the
            // node runs and answers 503 (readiness too) until it does, rather than exit and leave
            // systemd to give up on it.
            store = try TokenStores.open(
                configuration.database, connections: configuration.storeThreads,
                busyTimeout: .milliseconds(configuration.busyTimeoutMilliseconds), now: { clock.now() },
                report: { migration, took in
                    // Every schema change is logged as it is applied: what an on-call reads during an upgrade.
                    logger.log(
                        .info, "migration applied",
                        [
                            "migration.id": .int(migration.id), "migration.name": .string(migration.name),
                            "duration_ms": .double(Double(took.components.seconds) * 1e3 + Double(took.components.attoseconds) / 1e15),
                        ])
                },
                events: { event in
                    switch event {
                    case .waiting(let error):
                        logger.log(
                            .error, "the database does not answer: serving 503 and retrying every 2 s",
                            ["db": .string(configuration.database.redacted), "error": .string(error.reason)])
                    case .ready:
                        logger.log(.info, "the database answers: migrated, serving", ["db": .string(configuration.database.redacted)])
                    case .refused(let error):
                        logger.log(
                            .error, "the database answered but cannot be used: serving 503 until attestd is fixed and restarted",
                            ["db": .string(configuration.database.redacted), "error": .string(error.reason)])
                    }
                })
        } catch {
            throw StartupError(
                description:
                    "cannot open database \(configuration.database.redacted): \(DatabaseProblem.explain(error, configuration.database))")
        }
        let anchor = try Self.trustAnchor(configuration.trustAnchorFile)
        if let file = configuration.trustAnchorFile {
            logger.log(
                .warning, "TRUST ANCHOR REPLACED: attestations are verified against a non-Apple root; for tests and demos only",
                ["trust_anchor.file": .string(file), "trust_anchor.is_apple": .bool(anchor.isAppleRoot)])
        }
        var secrets: GatewaySecrets?
        if let file = configuration.gatewaySecretFile {
            do {
                secrets = try GatewaySecrets(file: file)
            } catch {
                throw StartupError(description: error.description)
            }
            if let warning = Self.secretFileWarning(file) {
                logger.log(.warning, warning.message, ["file": .string(file), "mode": .string(warning.mode)])
            }
        } else {
            logger.log(.warning, "no --gateway-secret-file: /v1/introspect answers 401 to everyone")
        }
        if let url = configuration.appleReceiptURL {
            logger.log(
                .warning,
                "APPLE RECEIPT URL REPLACED: receipts and their DeviceCheck JWTs go to a non-Apple server; for tests only",
                ["apple.url": .string(url)])
        }
        var policy = ServicePolicy()
        policy.attestPerIntegration = configuration.attestPerIntegration
        policy.challengePerIntegration = configuration.challengePerIntegration
        policy.perAddress = configuration.perAddress
        policy.allowsSeededChallenges = configuration.insecureTestMode
        let verifier: AttestationVerifier
        do {
            let additional = try configuration.additionalRootFile.map { file throws(StartupError) in
                try Self.additionalRoot(file, primary: anchor, logger: logger)
            }
            verifier = try AttestationVerifier(anchors: [anchor] + (additional.map { [$0] } ?? []))
        } catch let error as StartupError {
            throw error
        } catch {
            throw StartupError(description: "cannot build the verifier: \(error)")
        }
        let receipts: ReceiptVerifier
        do {
            receipts = try ReceiptVerifier.apple()
        } catch {
            throw StartupError(description: "cannot load Apple Root CA - G3 for receipts: \(error)")
        }
        let openedStore = store
        metrics = Metrics(version: version, schema: BuildVersion.schema, commit: BuildVersion.commit)
        let cache = StatisticsCache()
        statistics = cache
        gatewaySecrets = secrets
        verifications = VerificationTally(clock: clock)
        let service = TokenService(
            store: store, verifier: verifier, clock: clock, policy: policy, receipts: receipts,
            observer: ServiceObservers([metrics, verifications]))
        self.service = service
        let refresher = try Self.receiptRefresher(configuration: configuration, store: store, clock: clock, logger: logger)
        receiptRefresher = refresher
        let anchorMetrics = Self.anchorMetrics(verifier.anchors, testMode: configuration.insecureTestMode).text
        var settings = AttestAPI.Settings(
            gatewaySecrets: secrets, trustsAppleRoot: anchor.isAppleRoot, version: version,
            storage: configuration.database.kind.rawValue, testClock: testClock, trustedProxies: configuration.trustedProxies,
            limitsPerAddress: configuration.perAddress.perSecond > 0, logSuccessEvery: configuration.logSuccessEvery,
            exchangesReceiptsWithApple: configuration.appleReceiptURL == nil)
        settings.adminTrustedProxies = configuration.adminTrustedProxies
        settings.schema = BuildVersion.schema
        settings.commit = BuildVersion.commit
        settings.trustAnchorFingerprints = verifier.anchors.map(\.sha256Hex)
        settings.trustedRoots = Self.trustedRoots(verifier.anchors)
        settings.offloadThreads = configuration.storeThreads
        let workspaceAdmin = WorkspaceAdmin(
            store: store, clock: clock, logger: logger,
            sessions: ConsoleSessionPolicy(idleSeconds: Int64(configuration.consoleIdleSeconds)),
            devicesUnblockable: configuration.deviceUnblock)
        let listener = ListenerGauges()
        self.listener = listener
        self.workspaceAdmin = workspaceAdmin
        adminRouter = AttestAPI.adminRouter(admin: workspaceAdmin, settings: settings, logger: logger, metrics: metrics)
        router = AttestAPI.router(
            service: service, settings: settings,
            logger: logger, metrics: metrics,
            gauges: {
                // From the cache the purge timer refreshes: a scrape never counts rows, so it costs
                // the same at 200,000 devices as at one.
                let statistics = cache.current
                // Read now, not at the purge tick: resources and the pool change by the second.
                let process = ProcessStatistics.current()
                let pool = openedStore.poolStatistics
                return [
                    ("attestd_active_integrations", "Integrations not revoked.", statistics.activeIntegrations),
                    ("attestd_active_devices", "Device keys not blocked.", statistics.activeDevices),
                    ("attestd_revoked_integrations", "Integrations revoked (permanently).", statistics.revokedIntegrations),
                    ("attestd_suspended_integrations", "Integrations suspended (not revoked).", statistics.suspendedIntegrations),
                    ("process_resident_memory_bytes", "Resident memory of attestd.", process?.residentBytes ?? 0),
                    ("process_open_fds", "Open file descriptors of attestd.", process?.openDescriptors ?? 0),
                    ("process_max_fds", "The descriptor limit of attestd (LimitNOFILE).", process?.maximumDescriptors ?? 0),
                    ("process_threads", "Threads of attestd.", process?.threads ?? 0),
                    (
                        "attestd_http_parked_connections",
                        "Device-facing connections waiting for their answer now: a lookup (authorize, introspect) or a write (attest, token, revoke; counted from the start of its checks).",
                        listener.parkedConnections
                    ),
                    ("attestd_http_connection_limit", "Connections the device-facing listener holds at most.", listener.connectionLimit),
                    ("attestd_db_pool_size", "PostgreSQL connections the pool keeps at most (0 on SQLite).", pool?.size ?? 0),
                    ("attestd_db_pool_in_use", "PostgreSQL connections lent to requests now (0 on SQLite).", pool?.inUse ?? 0),
                    ("attestd_db_pool_waiting", "Requests waiting for a PostgreSQL connection now (0 on SQLite).", pool?.waiting ?? 0),
                    (
                        "attestd_clock_skew_milliseconds",
                        "The shared database's clock minus this node's at the last purge tick; past 5000 either way a PostgreSQL node refuses to serve. On SQLite what the purge sees: minus a step ahead while it holds back for it, or how far the clock reads before the newest token.",
                        Int(((service.clockSkewSeconds ?? 0) * 1000).rounded())
                    ),
                    (
                        "attestd_purge_held_back_seconds",
                        "Seconds the purge's horizon is behind this node's clock (SQLite, for one token lifetime after a start or a step ahead): expired rows it keeps for now.",
                        Int(service.purgeHeldBackSeconds.rounded())
                    ),
                    (
                        "attestd_config_last_reload_successful",
                        "0 when the last reload (SIGHUP, systemctl reload) failed to read a file: the settings in force are the previous ones, and the next start would refuse the file.",
                        cache.lastReloadSucceeded ? 1 : 0
                    ),
                    (
                        "attestd_last_purge_timestamp_seconds",
                        "Unix time of this node's last purge of expired rows that succeeded (0 before the first).", Int(cache.lastPurge)
                    ),
                    ("attestd_database_size_bytes", "Bytes on disk of the database (SQLite: the file and its WAL).", Int(statistics.bytes)),
                    ("attestd_trust_anchor_is_apple", "1 when Apple's root is the trust anchor.", anchor.isAppleRoot ? 1 : 0),
                    (
                        "attestd_receipt_anchor_not_after_seconds",
                        "Unix time at which Apple Root CA - G3, the anchor of receipts, expires: past it no receipt verifies.",
                        Int(receipts.anchor.notAfter)
                    ),
                    (
                        "attestd_apple_receipt_url_is_apple", "1 when receipts are exchanged with Apple's hosts (no --apple-receipt-url).",
                        configuration.appleReceiptURL == nil ? 1 : 0
                    ),
                ]
            },
            // The refresher's counters at 0 when it does not run, so that a rule reading them has a series.
            moreMetrics: { anchorMetrics + (refresher?.metricsText.text ?? ReceiptRefresher.idleMetricsText.text) })
    }

    /// What is wrong with the gateway secret file's mode, if anything: readable by other users,
    /// or by a group attestd is not in. Readable by attestd's own group is fine: the package
    /// installs it root:attestd 0640, so that attestd reads it and cannot change it.
    static func secretFileWarning(_ file: String) -> (message: String, mode: String)? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file),
            let mode = attributes[.posixPermissions] as? Int
        else { return nil }
        let octal = String(mode, radix: 8)
        if mode & 0o007 != 0 {
            return (
                "the gateway secret file can be read by other users: chmod o-rwx it (0640 root:attestd as the package installs it)", octal
            )
        }
        guard mode & 0o070 != 0, let group = (attributes[.groupOwnerAccountID] as? NSNumber).map({ gid_t($0.uint32Value) }) else {
            return nil
        }
        var groups = [gid_t](repeating: 0, count: Int(max(0, getgroups(0, nil))))
        let count = getgroups(Int32(groups.count), &groups)
        let own = Set([getegid()] + groups.prefix(Int(max(0, count))))
        guard !own.contains(group) else { return nil }
        return ("the gateway secret file can be read by a group attestd is not in: chgrp it to attestd's group, or chmod 600 it", octal)
    }

    /// The refresher the configuration asks for (nil without a secrets key file or with interval 0).
    static func receiptRefresher(
        configuration: ServerConfiguration, store: any TokenStore, clock: any WallClock, logger: Logger
    ) throws(StartupError) -> ReceiptRefresher? {
        guard let file = configuration.secretsKeyFile else {
            logger.log(.info, "no --secrets-key-file: device receipts are not refreshed with Apple")
            return nil
        }
        let secrets: SecretsKeyFile
        do {
            secrets = try SecretsKeyFile(path: file)
        } catch {
            throw StartupError(description: error.description)
        }
        if secrets.readableByOthers {
            logger.log(
                .warning, "the secrets key file can be read by other users: chmod 600 it (and chown it to attestd's user)",
                ["file": .string(file)])
        }
        guard configuration.receiptRefreshIntervalSeconds > 0 else {
            logger.log(.info, "--receipt-refresh-interval 0: device receipts are not refreshed with Apple")
            return nil
        }
        do {
            let verifier = try ReceiptVerifier.apple()
            let client = try HTTPSClient()
            var settings = ReceiptRefresherSettings()
            settings.intervalSeconds = configuration.receiptRefreshIntervalSeconds
            logger.log(
                .info, "receipt refresher started",
                [
                    "interval_seconds": .int(settings.intervalSeconds), "batch": .int(settings.batchSize),
                    "apple.url": .string(configuration.appleReceiptURL ?? "by environment"),
                ])
            return ReceiptRefresher(
                store: store, apple: AppleAttestationDataClient(client: client, overrideBaseURL: configuration.appleReceiptURL),
                verifier: verifier, secretsKey: secrets.key, clock: clock, logger: logger, settings: settings)
        } catch {
            throw StartupError(description: "cannot start the receipt refresher: \(error)")
        }
    }

    /// Stops the refresher and closes the store (after the listener stopped).
    /// False when the store could not be closed cleanly: SQLite's write-ahead log was not folded
    /// into the database file (a full disk, a reader that never finished), so the file alone is
    /// not a complete copy and the process must say so with its exit status.
    @discardableResult
    package func close() -> Bool {
        receiptRefresher?.stop()
        router.stop()
        flushVerifications()
        do {
            try service.closeStorage()
            return true
        } catch {
            logger.log(
                .error,
                "closing the database failed: its -wal file holds commits the database file lacks; back up both, or start and stop attestd again",
                ["error": .string(error.reason)])
            return false
        }
    }

    /// Re-reads the gateway secrets file (SIGHUP); on an error the secrets in force stay and the
    /// error is logged. Never logs a secret. False when the file could not be read.
    func reloadGatewaySecrets() -> Bool {
        guard let secrets = gatewaySecrets else {
            if configFile == nil { logger.log(.warning, "SIGHUP: neither --gateway-secret-file nor --config to re-read") }
            return true
        }
        do {
            let count = try secrets.reload()
            logger.log(.info, "gateway secrets reloaded", ["file": .string(secrets.file), "secrets": .int(count)])
            return true
        } catch {
            logger.log(.error, "gateway secrets not reloaded; the previous ones stay in force", ["error": .string(error.description)])
            return false
        }
    }

    /// Deletes expired tokens and challenges; logs failures.
    package func purge() {
        checkClock()
        do {
            let report = try service.purgeExpired()
            statistics.lastPurge = service.clock.now()
            if let verdict = report.verdict { tellHeldBack(verdict) }
            if report.removed > 0 { logger.log(.info, "purged expired rows", ["rows": .int(report.removed)]) }
        } catch {
            logger.log(.error, "purge failed", ["error": .string(error.subcode.identifier)])
        }
        flushVerifications()
        refreshStatistics()
    }

    /// Adds the verifications counted since the last flush to the store; on a failure they wait
    /// for the next one.
    package func flushVerifications() {
        do {
            try verifications.flush(into: store)
        } catch {
            logger.log(.warning, "verification counts not written; kept for the next purge tick", ["error": .string(error.reason)])
        }
    }

    /// Counts the rows for the gauges (off the scrape's path).
    package func refreshStatistics() {
        guard let fresh = try? service.statistics() else { return }
        statistics.current = fresh
    }
}

/// The last counted store statistics, when the last purge succeeded and whether the last reload
/// did, for the gauges.
final class StatisticsCache: Sendable {
    private let value = Mutex(StoreStatistics(activeIntegrations: 0, activeDevices: 0, revokedIntegrations: 0, bytes: 0))
    private let purged = Atomic<Int64>(0)

    private let reloaded = Atomic<Bool>(true)

    /// Whether the last reload (SIGHUP) read every file; true until one fails.
    var lastReloadSucceeded: Bool {
        get { reloaded.load(ordering: .relaxed) }
        set { reloaded.store(newValue, ordering: .relaxed) }
    }

    /// Unix seconds of the last purge that succeeded; 0 before the first.
    var lastPurge: Int64 {
        get { purged.load(ordering: .relaxed) }
        set { purged.store(newValue, ordering: .relaxed) }
    }

    var current: StoreStatistics {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// Why a database could not be opened, in the terms an operator acts on: a missing directory, a
/// directory or file this user may not write, or the store's own reason.
enum DatabaseProblem {
    static func explain(_ error: StorageError, _ location: StoreLocation) -> String {
        guard case .sqlite(let path) = location, error.code == .io || error.code == .readOnly else { return error.description }
        let directory = (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        let user = ProcessInfo.processInfo.environment["USER"] ?? String(getuid())
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue {
            return "the directory \(directory) does not exist (errno ENOENT); create it, owned by \(user), or point --db elsewhere"
        }
        if access(directory, W_OK) != 0 {
            return "user \(user) may not write to \(directory) (errno EACCES): it needs to create the database and its -wal file there"
        }
        if FileManager.default.fileExists(atPath: path), access(path, R_OK | W_OK) != 0 {
            return "user \(user) may not read and write \(path) (errno EACCES); check its owner and mode"
        }
        return error.description
    }
}
