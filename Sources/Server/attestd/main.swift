import AttestObservability
import AttestOptions
import AttestServer
import Dispatch
import Foundation
import Synchronization

// Wiring only: configuration from flags and environment, the server, and the signals that stop it.

let version = BuildVersion.current

// Why: the database (and its -wal and -shm files) holds device keys and token hashes; whatever
// umask attestd was started with, the files it creates are its own user's only (0600).
umask(0o077)
let arguments = Array(CommandLine.arguments.dropFirst())

let configuration = CommandLineEntry.parse(program: "attestd", usage: ServerConfiguration.usage, arguments: arguments) {
    arguments throws(UsageError) in try ServerConfiguration.parse(arguments, environment: ProcessInfo.processInfo.environment)
}
// --check-config: what a start would refuse, with these flags and this environment; no start.
if configuration.checkOnly {
    let problems = Application.checkConfiguration(configuration)
    for problem in problems { FileHandle.standardError.write(Data("attestd: \(problem)\n".utf8)) }
    if problems.isEmpty { FileHandle.standardOutput.write(Data("attestd: the configuration is fine\n".utf8)) }
    exit(problems.isEmpty ? 0 : 1)
}

// Request lines are written in blocks (at the latest a second later); every other line at once.
let logSink = BlockBufferedSink()
let logger = Logger(sink: logSink, minimumLevel: configuration.logLevel)

// SIGTERM and SIGINT: stop accepting, finish in-flight requests, exit 0. Installed before the
// server starts, so a signal is never lost to the default action. A parent may have started us
// with them blocked (the mask is inherited), so unblock them first.
let running = Mutex<Server?>(nil)
var stopSignals = sigset_t()
sigemptyset(&stopSignals)
sigaddset(&stopSignals, SIGTERM)
sigaddset(&stopSignals, SIGINT)
pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
let signals = [SIGTERM, SIGINT].map { number in
    let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
    source.setEventHandler {
        logger.log(.info, "signal received, draining", ["signal": .int(Int(number))])
        // Exit 1 when the database was not closed cleanly (a final checkpoint that failed on a
        // full disk): whoever stopped attestd must know the -wal file is still needed.
        let stoppedCleanly = running.withLock { $0 }?.stop() != false
        logSink.flush()
        exit(stoppedCleanly ? 0 : 1)
    }
    source.resume()
    return source
}

// SIGHUP: re-read the gateway secrets file and --config in this process (no restart, no
// dropped request).
signal(SIGHUP, SIG_IGN)
var hangUp = sigset_t()
sigemptyset(&hangUp)
sigaddset(&hangUp, SIGHUP)
pthread_sigmask(SIG_UNBLOCK, &hangUp, nil)
let reloadSignal = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .main)
reloadSignal.setEventHandler { running.withLock { $0 }?.reload() }
reloadSignal.resume()

let server: Server
do {
    server = try Server(configuration: configuration, version: version, logger: logger)
    running.withLock { $0 = server }
} catch {
    logger.log(.error, "refusing to start", ["error": .string(error.description)])
    logSink.flush()
    // 75 (EX_TEMPFAIL): worth a retry, the unit restarts it; 1: fix the configuration first.
    exit(error.isTransient ? 75 : 1)
}

// Expired challenges and tokens are purged now and periodically, never on the main queue: the
// signal handlers above run there, and a purge can wait for the database (PurgeTimer).
server.startPurging(every: configuration.purgeIntervalSeconds)

withExtendedLifetime((signals, reloadSignal)) { dispatchMain() }
