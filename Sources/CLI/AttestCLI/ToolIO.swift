import Foundation

/// Everything a command touches outside itself, injected so tests run commands in-process.
package struct ToolIO: Sendable {
    /// Reads a whole file.
    package var readFile: @Sendable (String) throws -> [UInt8]
    /// Reads all of standard input.
    package var readStandardInput: @Sendable () -> [UInt8]
    /// The current time, Unix seconds.
    package var now: @Sendable () -> Int64
    /// Writes to standard output.
    package var standardOutput: @Sendable (String) -> Void
    /// Writes to standard error.
    package var standardError: @Sendable (String) -> Void
    /// Environment variables (`ATTESTD_DB`).
    package var environment: [String: String]
    /// Reads one line of standard input (for confirmations); nil at end of input.
    package var readLine: @Sendable () -> String?

    package init(
        readFile: @escaping @Sendable (String) throws -> [UInt8], readStandardInput: @escaping @Sendable () -> [UInt8],
        now: @escaping @Sendable () -> Int64, standardOutput: @escaping @Sendable (String) -> Void,
        standardError: @escaping @Sendable (String) -> Void, environment: [String: String] = [:],
        readLine: @escaping @Sendable () -> String? = { nil }
    ) {
        self.readFile = readFile
        self.readStandardInput = readStandardInput
        self.now = now
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.environment = environment
        self.readLine = readLine
    }

    /// The real process: files, stdin, the system clock, stdout and stderr.
    package static let process = ToolIO(
        readFile: { path in Array(try Data(contentsOf: URL(fileURLWithPath: path))) },
        readStandardInput: { Array(FileHandle.standardInput.readDataToEndOfFile()) },
        now: { Int64(Date().timeIntervalSince1970) },
        standardOutput: { FileHandle.standardOutput.write(Data($0.utf8)) },
        standardError: { FileHandle.standardError.write(Data($0.utf8)) },
        environment: ProcessInfo.processInfo.environment,
        readLine: { Swift.readLine(strippingNewline: true) })
}
