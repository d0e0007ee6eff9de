import AttestOptions
import Foundation

/// One command: the words that name it, its option table, and what it runs.
struct Command: Sendable {
    let path: [String]
    let summary: String
    let options: OptionTable
    let run: @Sendable (ParsedOptions, ToolIO) throws(UsageError) -> Int32

    init(
        path: [String], summary: String, options: [OptionSpec], positionals: [String] = [],
        run: @escaping @Sendable (ParsedOptions, ToolIO) throws(UsageError) -> Int32
    ) {
        self.path = path
        self.summary = summary
        self.options = OptionTable(options, positionals: positionals)
        self.run = run
    }

    /// Help generated from the option table that parsing uses.
    var usage: String {
        let lines =
            ["usage: attestctl \(path.joined(separator: " ")) \(options.synopsis)", "", summary, "", "options:"] + options.optionColumns
        return lines.joined(separator: "\n") + "\n"
    }
}

/// `attestctl`: parse, validate, run. Help and dispatch come from the same command table.
package struct AttestCtl: Sendable {
    static let commands: [Command] = [
        VerifyCommands.attestation, VerifyCommands.assertion, VerifyCommands.receipt, IntegrationCommands.create,
        IntegrationCommands.revoke, IntegrationCommands.list, IntegrationCommands.show, IntegrationCommands.suspend,
        IntegrationCommands.resume, PolicyCommands.update, FraudKeyCommands.setFraudKey, DeviceCommands.list,
        DeviceCommands.show, TokenCommands.revoke, DeviceCommands.block, DeviceCommands.unblock, AuditCommands.list,
        AdminKeyCommands.create, AdminKeyCommands.list, AdminKeyCommands.disable, AdminKeyCommands.enable, AdminKeyCommands.revoke,
        DebugTokenCommands.create, DebugTokenCommands.list,
        DebugTokenCommands.revoke, StoreCommands.migrate, StoreCommands.check,
        StoreCommands.copy, StoreCommands.backup, SimulateCommand.command,
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
        if arguments == ["--version"] {
            io.standardOutput("attestctl \(BuildVersion.described)\n")
            return ExitCode.success
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
            let options = try command.options.parse(rest, environment: io.environment)
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
