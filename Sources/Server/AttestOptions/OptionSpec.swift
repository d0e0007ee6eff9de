/// One command-line option, declared once as a constant and referenced by that identifier
/// wherever it is parsed, looked up or listed in help (as swift-argument-parser's `@Option`):
/// a misspelt option is a compile error, never an empty string.
package struct OptionSpec: Sendable, Hashable {
    /// What the option takes on the command line.
    package enum Kind: Sendable, Hashable {
        /// `--name`, no value.
        case flag
        /// `--name VALUE` or `--name=VALUE`, at most once.
        case single
        /// `--name VALUE`, as many times as wanted.
        case repeated
    }

    /// The name without the leading `--`.
    package let name: String
    /// What the value is, in help (`FILE`, `HOST:PORT`); empty for a flag.
    package let valueName: String
    /// One line of help.
    package let help: String
    package let kind: Kind
    /// Whether parsing refuses a command line without it (after the environment fallback).
    package let isRequired: Bool
    /// The environment variable read when the option is not on the command line.
    package let environment: String?

    /// An option that takes a value.
    package init(
        _ name: String, value: String, help: String, required: Bool = false, repeatable: Bool = false, environment: String? = nil
    ) {
        self.name = name
        valueName = value
        self.help = help
        kind = repeatable ? .repeated : .single
        isRequired = required
        self.environment = environment
    }

    /// A value-less switch (`--json`, `--yes`); switches have no environment fallback.
    package init(flag name: String, help: String) {
        self.name = name
        valueName = ""
        self.help = help
        kind = .flag
        isRequired = false
        environment = nil
    }

    /// Whether the option is a value-less switch.
    package var isFlag: Bool { kind == .flag }

    /// `--name VALUE`, or `--name` for a flag, as usage lines show it.
    package var display: String { isFlag ? "--\(name)" : "--\(name) \(valueName)" }
}

/// A usage error: the message goes to stderr with the usage text, and the exit code is 64.
package struct UsageError: Error, Equatable, Sendable {
    package let message: String

    package init(message: String) {
        self.message = message
    }
}

/// Exit codes, as swift-argument-parser uses them.
package enum ExitCode {
    /// Success, or help was asked for.
    package static let success: Int32 = 0
    /// The command ran and the answer is "no" (a rejected object), or it could not complete.
    package static let failure: Int32 = 1
    /// The command line was wrong (sysexits EX_USAGE).
    package static let usage: Int32 = 64
}
