import Foundation

/// One command: the words that name it, its options, and what it runs.
struct Command: Sendable {
    let path: [String]
    let summary: String
    let options: [OptionSpec]
    var positionals: [String] = []
    let run: @Sendable (ParsedOptions, ToolIO) throws(UsageError) -> Int32

    var usage: String {
        let synopsis =
            positionals
            + options.map {
                let text = $0.isFlag ? "--\($0.name)" : "--\($0.name) \($0.valueName)"
                return $0.isRequired ? text : "[\(text)]"
            }
        var lines = ["usage: attestctl \(path.joined(separator: " ")) \(synopsis.joined(separator: " "))", "", summary, "", "options:"]
        let width = options.map { $0.name.count + $0.valueName.count + 4 }.max() ?? 0
        for option in options {
            let left = option.isFlag ? "--\(option.name)" : "--\(option.name) \(option.valueName)"
            lines.append("  " + left.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + option.help)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// `attestctl`: parse, validate, run. Help and dispatch come from the same command table.
package struct AttestCtl: Sendable {
    static let commands: [Command] = [
        VerifyCommands.attestation, VerifyCommands.assertion, IntegrationCommands.create, IntegrationCommands.revoke,
        IntegrationCommands.list, IntegrationCommands.show, SimulateCommand.command,
    ]

    let io: ToolIO

    package init(io: ToolIO) {
        self.io = io
    }

    /// Runs one invocation (arguments without the program name) and returns the exit code.
    package func run(_ arguments: [String]) -> Int32 {
        if arguments.isEmpty {
            io.standardError(Self.overview)
            return ExitCode.usage
        }
        if ["help", "--help", "-h"].contains(arguments[0]) {
            let topic = arguments.dropFirst().filter { !$0.hasPrefix("-") }
            if let command = Self.commands.first(where: { $0.path == Array(topic) }) {
                io.standardOutput(command.usage)
            } else {
                io.standardOutput(Self.overview)
            }
            return ExitCode.success
        }
        guard let command = Self.commands.first(where: { Array(arguments.prefix($0.path.count)) == $0.path }) else {
            io.standardError("attestctl: unknown command '\(arguments.prefix(2).joined(separator: " "))'\n\n" + Self.overview)
            return ExitCode.usage
        }
        let rest = arguments.dropFirst(command.path.count)
        if rest.contains("--help") || rest.contains("-h") {
            io.standardOutput(command.usage)
            return ExitCode.success
        }
        do {
            let options = try ParsedOptions.parse(rest, specs: command.options, positionalNames: command.positionals)
            return try command.run(options, io)
        } catch {
            io.standardError("attestctl \(command.path.joined(separator: " ")): \(error.message)\n\n" + command.usage)
            return ExitCode.usage
        }
    }

    static var overview: String {
        var lines = ["usage: attestctl <command> [options]", "", "commands:"]
        let width = commands.map { $0.path.joined(separator: " ").count }.max() ?? 0
        for command in commands {
            lines.append(
                "  " + command.path.joined(separator: " ").padding(toLength: width, withPad: " ", startingAt: 0) + "  " + command.summary)
        }
        lines += ["", "Run 'attestctl help <command>' for a command's options."]
        return lines.joined(separator: "\n") + "\n"
    }
}
