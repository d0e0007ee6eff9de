/// One `--name VALUE` option of a command.
struct OptionSpec: Sendable {
    let name: String
    let valueName: String
    let help: String
    let isRequired: Bool
    let isRepeatable: Bool

    init(_ name: String, value: String, help: String, required: Bool = false, repeatable: Bool = false) {
        self.name = name
        valueName = value
        self.help = help
        isRequired = required
        isRepeatable = repeatable
    }
}

/// A usage error: the message goes to stderr with the command's usage, and the exit code is 64.
struct UsageError: Error, Sendable {
    let message: String
}

/// The options given to one command, after parsing and the required/duplicate checks.
struct ParsedOptions: Sendable {
    private var values: [String: [String]]

    init(values: [String: [String]]) {
        self.values = values
    }

    /// The single value of `name`, if given.
    func value(_ name: String) -> String? { values[name]?.first }

    /// Every value of a repeatable option.
    func values(_ name: String) -> [String] { values[name] ?? [] }

    /// The value of a required option (parsing already proved it is there).
    func required(_ name: String) -> String { values[name]?.first ?? "" }

    /// Parses `--name VALUE` and `--name=VALUE` against `specs`; nothing else is accepted.
    static func parse(_ arguments: ArraySlice<String>, specs: [OptionSpec]) throws(UsageError) -> ParsedOptions {
        var values: [String: [String]] = [:]
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            guard argument.hasPrefix("--") else { throw UsageError(message: "unexpected argument '\(argument)'") }
            var name = String(argument.dropFirst(2))
            var value: String?
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let spec = specs.first(where: { $0.name == name }) else {
                throw UsageError(message: "unknown option '--\(name)'")
            }
            if value == nil {
                index += 1
                guard index < arguments.endIndex else { throw UsageError(message: "--\(name) needs a value (\(spec.valueName))") }
                value = arguments[index]
            }
            if !spec.isRepeatable, values[name] != nil { throw UsageError(message: "--\(name) is given twice") }
            values[name, default: []].append(value ?? "")
            index += 1
        }
        for spec in specs where spec.isRequired && values[spec.name] == nil {
            throw UsageError(message: "missing --\(spec.name) \(spec.valueName)")
        }
        return ParsedOptions(values: values)
    }
}
