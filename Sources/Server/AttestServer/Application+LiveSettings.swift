import AttestObservability

extension Application {
    /// `--config` at start: what it sets wins over `--log-level`; a wrong file refuses the start.
    static func applyConfigFile(_ file: String, to logger: Logger) throws(StartupError) {
        do {
            apply(try LiveSettings.read(file), to: logger)
        } catch {
            throw StartupError(description: error.description)
        }
    }

    private static func apply(_ settings: LiveSettings, to logger: Logger) {
        if let level = settings.logLevel { logger.threshold.set(level) }
    }

    /// SIGHUP (`systemctl reload attestd`): re-reads the gateway secrets and `--config`. A wrong
    /// file changes nothing and says which line is wrong, and `attestd_config_last_reload_successful`
    /// turns 0 until a reload succeeds. A setting removed from the file returns to what the flags
    /// and environment say.
    package func reload() {
        var succeeded = reloadGatewaySecrets()
        if let file = configFile {
            do {
                let settings = try LiveSettings.read(file)
                logger.threshold.set(settings.logLevel ?? startLogLevel)
                // At warning, so that it shows at every level but error.
                logger.log(.warning, "settings reloaded", ["file": .string(file), "log_level": .string(logger.minimumLevel.rawValue)])
            } catch {
                logger.log(.error, "settings not reloaded; the previous ones stay in force", ["error": .string(error.description)])
                succeeded = false
            }
        }
        statistics.lastReloadSucceeded = succeeded
    }
}
