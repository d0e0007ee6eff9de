import Foundation

/// Where structured log lines go. Injected: stderr in the server, an in-memory sink in tests.
package protocol LogSink: Sendable {
    /// Writes one complete line (no trailing newline).
    func write(_ line: String)
}

/// Hands each line to a closure (e.g. a tool's injected stderr).
package struct ClosureSink: LogSink {
    let body: @Sendable (String) -> Void
    package init(write: @escaping @Sendable (String) -> Void) { body = write }
    package func write(_ line: String) { body(line) }
}

/// Writes each line to standard error.
package struct StandardErrorSink: LogSink {
    package init() {}
    package func write(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }
}

/// One JSON object per line with dotted keys (`request.id`, `client.id`). Callers pass only
/// values that are safe to log: never a token, challenge, key or attestation bytes.
package struct Logger: Sendable {
    let sink: any LogSink
    /// Fields added to every line (e.g. the tool and the acting user).
    let fields: [String: String]

    package init(sink: any LogSink, fields: [String: String] = [:]) {
        self.sink = sink
        self.fields = fields
    }

    /// Logs `message` at `level` with string and number fields.
    package func log(_ level: String, _ message: String, _ fields: [String: any Sendable] = [:]) {
        var object: [String: Any] = ["ts": ISO8601DateFormatter().string(from: Date()), "level": level, "msg": message]
        for (key, value) in self.fields { object[key] = value }
        for (key, value) in fields { object[key] = value }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return
        }
        sink.write(String(decoding: data, as: UTF8.self))
    }
}
