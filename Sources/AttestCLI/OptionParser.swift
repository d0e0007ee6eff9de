/// One `--name VALUE` option of a command.
struct OptionSpec: Sendable {
    let name: String
    let valueName: String
    let help: String
    let isRequired: Bool
    let isRepeatable: Bool
    /// A switch that takes no value (`--json`, `--yes`).
    let isFlag: Bool

    init(_ name: String, value: String, help: String, required: Bool = false, repeatable: Bool = false) {
        self.name = name
        valueName = value
        self.help = help
        isRequired = required
        isRepeatable = repeatable
        isFlag = false
    }

    /// A value-less switch.
    init(flag name: String, help: String) {
        self.name = name
        valueName = ""
        self.help = help
        isRequired = false
        isRepeatable = false
        isFlag = true
    }
}

/// A usage error: the message goes to stderr with the command's usage, and the exit code is 64.
struct UsageError: Error, Sendable {
    let message: String
}

/// The options given to one command, after parsing and the required/duplicate checks.
struct ParsedOptions: Sendable {
    private var values: [String: [String]]
    /// Positional arguments, in order.
    let positionals: [String]

    init(values: [String: [String]], positionals: [String] = []) {
        self.values = values
        self.positionals = positionals
    }

    /// Whether a switch was given.
    func flag(_ name: String) -> Bool { values[name] != nil }

    /// The single value of `name`, if given.
    func value(_ name: String) -> String? { values[name]?.first }

    /// Every value of a repeatable option.
    func values(_ name: String) -> [String] { values[name] ?? [] }

    /// The value of a required option (parsing already proved it is there).
    func required(_ name: String) -> String { values[name]?.first ?? "" }

    /// Parses `--name VALUE`, `--name=VALUE`, `--switch` and exactly `positionalNames.count`
    /// positional arguments against `specs`; nothing else is accepted.
    static func parse(
        _ arguments: ArraySlice<String>, specs: [OptionSpec], positionalNames: [String] = []
    ) throws(UsageError) -> ParsedOptions {
        var values: [String: [String]] = [:]
        var positionals: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            guard argument.hasPrefix("--") else {
                guard positionals.count < positionalNames.count else { throw UsageError(message: "unexpected argument '\(argument)'") }
                positionals.append(argument)
                index += 1
                continue
            }
            var name = String(argument.dropFirst(2))
            var value: String?
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let spec = specs.first(where: { $0.name == name }) else {
                throw UsageError(message: "unknown option '--\(name)'")
            }
            if spec.isFlag {
                guard value == nil else { throw UsageError(message: "--\(name) takes no value") }
                value = ""
            } else if value == nil {
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
        guard positionals.count == positionalNames.count else {
            throw UsageError(message: "missing \(positionalNames[positionals.count])")
        }
        return ParsedOptions(values: values, positionals: positionals)
    }
}
