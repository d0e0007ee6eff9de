package import AttestObservability
import Foundation

/// The settings attestd reads from `--config FILE` at start and again on SIGHUP (`systemctl
/// reload attestd`): the ones that can change while it serves. One `name = value` a line, `#`
/// comments, the names of the command-line options. Today: `log-level`.
package struct LiveSettings: Sendable, Equatable {
    /// `log-level`: lines below it are dropped; nil when the file does not set it.
    package var logLevel: LogLevel?

    package init(logLevel: LogLevel? = nil) { self.logLevel = logLevel }

    /// What a line of the file got wrong, with its number.
    package struct Problem: Error, CustomStringConvertible {
        package let description: String
    }

    /// Parses the file's text; the first wrong line is the error, named by its number and its key
    /// and never by its text (a value may be a secret pasted into the wrong file): a key is named
    /// only when it has the shape of an option's name.
    package static func parse(_ text: String, file: String) throws(Problem) -> LiveSettings {
        var settings = LiveSettings()
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            let at = "\(file) line \(index + 1)"
            guard let equals = line.firstIndex(of: "=") else { throw Problem(description: "\(at): not `name = value`") }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            switch name {
            case "log-level":
                guard let level = LogLevel(rawValue: value) else {
                    throw Problem(description: "\(at): log-level is debug, info, warning or error")
                }
                settings.logLevel = level
            default:
                let key = Self.isOptionName(name) ? "'\(name)'" : "this key"
                throw Problem(description: "\(at): \(key) cannot be set here (only log-level, which can change while attestd runs)")
            }
        }
        return settings
    }

    /// Lower-case letters, digits and dashes, at most 40: the shape of an option's name.
    private static func isOptionName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 40
            && name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
    }

    /// Reads and parses `file`.
    package static func read(_ file: String) throws(Problem) -> LiveSettings {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw Problem(
                description: FileManager.default.fileExists(atPath: file)
                    ? "the config file \(file) exists but cannot be read by this user" : "the config file \(file) does not exist")
        }
        return try parse(text, file: file)
    }
}
