import Foundation

/// The front door of a single-command executable (attestd, attest-bench, attest-load): help on
/// request, then parse and validate, with swift-argument-parser's exits.
package enum CommandLineEntry {
    /// Whether the command line asks for help (`--help` or `-h` anywhere).
    package static func asksForHelp(_ arguments: some Sequence<String>) -> Bool {
        arguments.contains { $0 == "--help" || $0 == "-h" }
    }

    /// Prints `usage` on stdout and exits 0 when help is asked for; otherwise returns what `parse`
    /// makes of `arguments`, or prints `program: message`, a blank line and `usage` on stderr and
    /// exits 64 when it throws a usage error.
    package static func parse<Parsed>(
        program: String, usage: String, arguments: [String], _ parse: ([String]) throws(UsageError) -> Parsed
    ) -> Parsed {
        if asksForHelp(arguments) {
            FileHandle.standardOutput.write(Data(usage.utf8))
            exit(ExitCode.success)
        }
        if arguments == ["--version"] {
            FileHandle.standardOutput.write(Data("\(program) \(BuildVersion.described)\n".utf8))
            exit(ExitCode.success)
        }
        do {
            return try parse(arguments)
        } catch {
            FileHandle.standardError.write(Data("\(program): \(error.message)\n\n\(usage)".utf8))
            exit(ExitCode.usage)
        }
    }
}
