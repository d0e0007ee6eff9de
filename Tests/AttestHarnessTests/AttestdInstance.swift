import AttestTesting
import Foundation
import Synchronization

/// A failure of the harness itself (a process that will not start or answer), not of attestd's checks.
struct HarnessError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// One HTTP answer, kept as a value so that the replay can be shared by every test of the suite.
struct Answer: Sendable {
    let status: Int
    let text: String
    /// Header names lowercased.
    let headers: [String: String]

    init(_ response: RawHTTPResponse) {
        status = response.status
        text = response.text
        headers = Dictionary(response.headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The body as a JSON object (empty when it is not one).
    var object: [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]) ?? [:]
    }

    /// A string member of the JSON object body.
    func field(_ name: String) -> String? { object[name] as? String }
}

/// The real `attestd` binary in `--insecure-test-mode` on an ephemeral loopback port, with Apple's
/// root (no `--trust-anchor`), and the real `attestctl` beside it for administration.
final class AttestdInstance {
    /// `swift build --build-tests` puts the executables beside the test bundle.
    static let directory = Bundle.main.bundleURL
    static let attestd = directory.appendingPathComponent("attestd")
    static let attestctl = directory.appendingPathComponent("attestctl")
    /// Every HTTP call gives up after this many seconds.
    static let requestTimeoutSeconds = 2

    let workDirectory: URL
    let databasePath: String
    let port: UInt16
    private let process: Process
    private let log: LogCollector

    init() throws {
        workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("attestd-harness-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
        databasePath = workDirectory.appendingPathComponent("attestd.sqlite").path
        process = Process()
        process.executableURL = Self.attestd
        process.arguments = ["--insecure-test-mode", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--db", databasePath]
        process.currentDirectoryURL = workDirectory
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        log = LogCollector(errors.fileHandleForReading)
        try process.run()
        guard let port = log.waitForPort(seconds: 10, while: { [process] in process.isRunning }) else {
            process.terminate()
            throw HarnessError("attestd did not log \"listen.port\" within 10 s; stderr: \(log.text)")
        }
        self.port = port
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: workDirectory)
    }

    /// Everything attestd has written to stderr so far.
    var logText: String { log.text }

    /// Sends SIGTERM and waits (at most `seconds`, then SIGKILL) for the exit status.
    func stop(within seconds: Double = 10) -> Int32 {
        process.terminate()
        if !Self.wait(for: process, seconds: seconds) {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        log.waitForEnd(seconds: 2)
        return process.terminationStatus
    }

    /// One request on a fresh connection, with the harness's timeout.
    func request(_ method: String, _ target: String, headers: [(String, String)] = []) throws -> Answer {
        let client = try RawHTTPClient(port: port, receiveTimeoutSeconds: Self.requestTimeoutSeconds)
        return Answer(try client.request(method, target, headers: headers))
    }

    /// POSTs a JSON object of strings (slashes unescaped, as a device would send them).
    func post(_ target: String, _ fields: [String: String]) throws -> Answer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(fields), as: UTF8.self)
        let client = try RawHTTPClient(port: port, receiveTimeoutSeconds: Self.requestTimeoutSeconds)
        return Answer(try client.postJSON(target, json))
    }

    /// Runs `attestctl` on this instance's database and returns its standard output (exit 0 required).
    func attestctl(_ arguments: [String]) throws -> String {
        let tool = Process()
        tool.executableURL = Self.attestctl
        tool.arguments = arguments + ["--db", databasePath]
        tool.currentDirectoryURL = workDirectory
        let output = Pipe()
        let errors = Pipe()
        tool.standardOutput = output
        tool.standardError = errors
        try tool.run()
        guard Self.wait(for: tool, seconds: 10) else {
            kill(tool.processIdentifier, SIGKILL)
            throw HarnessError("attestctl \(arguments.prefix(2).joined(separator: " ")) did not finish within 10 s")
        }
        // Outputs are a few hundred bytes: they fit the pipe buffers, so reading after the exit cannot deadlock.
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard tool.terminationStatus == 0 else {
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw HarnessError("attestctl exited \(tool.terminationStatus): \(message)")
        }
        return text
    }

    private static func wait(for process: Process, seconds: Double) -> Bool {
        eventually(within: seconds) { !process.isRunning }
    }
}

/// Drains a child's stderr on its own thread (so a chatty child never blocks on a full pipe) and
/// keeps the text for the port and for failure messages.
final class LogCollector: Sendable {
    private let state = Mutex((text: "", ended: false))

    init(_ handle: FileHandle) {
        let thread = Thread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                state.withLock { $0.text += String(decoding: chunk, as: UTF8.self) }
            }
            state.withLock { $0.ended = true }
        }
        thread.start()
    }

    var text: String { state.withLock { $0.text } }

    /// The port from attestd's `"listening"` JSON line (`"listen.port":N`), or nil at the deadline
    /// or when `alive` turns false first.
    func waitForPort(seconds: Double, while alive: () -> Bool) -> UInt16? {
        var port: UInt16?
        _ = eventually(within: seconds) {
            let seen = text
            if let range = seen.range(of: #""listen.port":"#) {
                let digits = seen[range.upperBound...].prefix { $0.isNumber }
                if seen[range.upperBound...].count > digits.count { port = UInt16(digits) }
            }
            return port != nil || !alive()
        }
        return port
    }

    /// Waits for the end of the stream (the child has exited and its stderr is drained).
    func waitForEnd(seconds: Double) {
        _ = eventually(within: seconds) { state.withLock { $0.ended } }
    }
}
