import AttestCrypto
import Foundation
import Synchronization

/// Where structured log lines go. Injected: stderr in the server, an in-memory sink in tests.
package protocol LogSink: Sendable {
    /// Writes one complete line (no trailing newline).
    func write(_ line: String)
    /// Writes one line that may wait a moment to be written with others (a request's line).
    func writeBatched(_ line: String)
}

extension LogSink {
    /// Writes the line at once: only a buffering sink (`BlockBufferedSink`) holds lines.
    package func writeBatched(_ line: String) { write(line) }
}

/// Hands each line to a closure (e.g. a tool's injected stderr).
package struct ClosureSink: LogSink {
    let body: @Sendable (String) -> Void
    package init(write: @escaping @Sendable (String) -> Void) { body = write }
    package func write(_ line: String) { body(line) }
}

/// Writes each line to standard error with one write(2) (unbuffered: nothing is lost in a crash;
/// attestd's own lines go through a `BlockBufferedSink`).
package struct StandardErrorSink: LogSink {
    package init() {}
    package func write(_ line: String) {
        var text = line
        text.append("\n")
        text.withUTF8 { FileDescriptorOutput.writeAll(UnsafeRawBufferPointer($0), to: 2) }
    }
}

/// A log field's value: text, whole number, number or flag.
package enum LogValue: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    package init(stringLiteral value: String) { self = .string(value) }
    package init(integerLiteral value: Int) { self = .int(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
}

/// How much a log line matters; lines below the logger's minimum are not written.
package enum LogLevel: String, Sendable, Comparable, CaseIterable {
    case debug
    case info
    case warning
    case error

    private var rank: Int {
        switch self {
        case .debug: 0
        case .info: 1
        case .warning: 2
        case .error: 3
        }
    }

    /// Orders by severity: debug < info < warning < error.
    package static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rank < rhs.rank }
}

/// The level below which lines are dropped, shared by every copy of a logger so that it can be
/// changed while the process runs (attestd's SIGHUP re-reads it from `--config`).
package final class LogThreshold: Sendable {
    private let rank: Atomic<Int>

    package init(_ level: LogLevel) { rank = Atomic(LogLevel.allCases.firstIndex(of: level) ?? 1) }

    package var level: LogLevel { LogLevel.allCases[rank.load(ordering: .relaxed)] }

    package func set(_ level: LogLevel) { rank.store(LogLevel.allCases.firstIndex(of: level) ?? 1, ordering: .relaxed) }
}

/// One JSON object per line with dotted keys (`request.id`, `client.id`). Callers pass only
/// values that are safe to log: never a token, challenge, key or attestation bytes.
package struct Logger: Sendable {
    let sink: any LogSink
    /// Lines below this level are dropped; shared by the logger's copies.
    package let threshold: LogThreshold
    /// Lines below this level are dropped.
    package var minimumLevel: LogLevel { threshold.level }
    /// Fields added to every line (e.g. the tool and the acting user), pre-rendered.
    private let fixedFields: String

    /// A logger writing to `sink` lines at `minimumLevel` or above, each with `fields` appended.
    package init(sink: any LogSink, minimumLevel: LogLevel = .info, fields: [String: String] = [:]) {
        self.sink = sink
        threshold = LogThreshold(minimumLevel)
        var rendered = ""
        for key in fields.keys.sorted() {
            rendered += ","
            JSONText.appendString(key, to: &rendered)
            rendered += ":"
            JSONText.appendString(fields[key] ?? "", to: &rendered)
        }
        fixedFields = rendered
    }

    /// Logs `message` at `level` with string, integer, floating-point and boolean fields.
    package func log(_ level: LogLevel, _ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) {
        guard level >= minimumLevel else { return }
        log(level, message, fields: fields.map { ($0.key, $0.value) })
    }

    /// Whether a line at `level` would be written (to skip building fields for nothing).
    package func writes(_ level: LogLevel) -> Bool { level >= minimumLevel }

    /// Logs one line: `ts`, `level`, `msg`, then `fields` in the order given, then the fixed fields.
    ///
    /// A `batched` line (a request's line, the access log) may wait a moment in a buffering sink
    /// to be written with others; any other line is written at once.
    ///
    /// Written directly, into bytes: Foundation's date formatter and JSONSerialization cost about
    /// half of a request's CPU when they ran on every request, and appending to a String (its
    /// flags and capacity checked on each of a line's 30 appends) most of the line's cost after.
    package func log(_ level: LogLevel, _ message: String, fields: [(String, LogValue)], batched: Bool = false) {
        guard level >= minimumLevel else { return }
        var line: [UInt8] = []
        line.reserveCapacity(384)
        line.append(contentsOf: #"{"ts":""#.utf8)
        line.append(contentsOf: UTCTimestamp.now().utf8)
        line.append(contentsOf: #"","level":""#.utf8)
        line.append(contentsOf: level.rawValue.utf8)
        line.append(contentsOf: #"","msg":"#.utf8)
        JSONText.appendString(message, to: &line)
        for (key, value) in fields {
            line.append(UInt8(ascii: ","))
            JSONText.appendString(key, to: &line)
            line.append(UInt8(ascii: ":"))
            switch value {
            case .string(let text): JSONText.appendString(text, to: &line)
            case .int(let number): line.append(contentsOf: String(number).utf8)
            case .double(let number): line.append(contentsOf: (number.isFinite ? String(number) : "null").utf8)
            case .bool(let flag): line.append(contentsOf: (flag ? "true" : "false").utf8)
            }
        }
        line.append(contentsOf: fixedFields.utf8)
        line.append(UInt8(ascii: "}"))
        let text = String(decoding: line, as: UTF8.self)
        if batched { sink.writeBatched(text) } else { sink.write(text) }
    }
}

/// RFC 3339 UTC timestamps with second precision, without Foundation's formatters.
package enum UTCTimestamp {
    /// The last second formatted, reused while the clock stays in that second.
    private static let last = Mutex((seconds: 0, text: ""))

    /// Now, e.g. "2026-11-30T11:41:49Z".
    package static func now() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        // Never waits for the lock: a thread that finds it taken formats the time itself, so the
        // workers logging at once do not queue on one another.
        if let cached = last.withLockIfAvailable({ $0.seconds == time.tv_sec ? $0.text : nil }) ?? nil { return cached }
        let text = format(time.tv_sec)
        _ = last.withLockIfAvailable { $0 = (time.tv_sec, text) }
        return text
    }

    /// `unixSeconds` as "2026-11-30T11:41:49Z".
    package static func format(_ unixSeconds: Int) -> String {
        var parts = tm()
        var seconds = unixSeconds
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : String(value) }
        return
            "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}
