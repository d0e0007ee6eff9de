/// The options and positional arguments of one command: the single table that parsing, lookups
/// and help are all made from.
package struct OptionTable: Sendable {
    package let options: [OptionSpec]
    /// Names of the positional arguments, in order (`CLIENT_ID`); a name in brackets (`[TOKEN]`)
    /// may be left out, and only trailing ones may be.
    package let positionals: [String]

    /// A table; two options with one name, or a required positional after an optional one, are
    /// programming errors.
    package init(_ options: [OptionSpec], positionals: [String] = []) {
        precondition(Set(options.map(\.name)).count == options.count, "an option name appears twice in one table")
        let required = positionals.prefix { !$0.hasPrefix("[") }.count
        precondition(positionals.dropFirst(required).allSatisfy { $0.hasPrefix("[") }, "a required positional follows an optional one")
        self.options = options
        self.positionals = positionals
    }

    /// How many positionals must be given.
    var requiredPositionals: Int { positionals.prefix { !$0.hasPrefix("[") }.count }

    /// Parses `--name VALUE`, `--name=VALUE`, `--switch` and exactly `positionals.count` positional
    /// arguments; nothing else is accepted. An option not on the command line takes the value of its
    /// environment variable, if `environment` has it (the command line wins).
    package func parse(_ arguments: some Collection<String>, environment: [String: String] = [:]) throws(UsageError) -> ParsedOptions {
        var values: [String: [String]] = [:]
        var given: [String] = []
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            guard argument.hasPrefix("--") else {
                guard given.count < positionals.count else { throw UsageError(message: "unexpected argument '\(argument)'") }
                given.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var value: String?
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let spec = options.first(where: { $0.name == name }) else { throw UsageError(message: "unknown option '--\(name)'") }
            if spec.isFlag {
                guard value == nil else { throw UsageError(message: "--\(name) takes no value") }
            } else if value == nil {
                guard let next = remaining.popFirst() else { throw UsageError(message: "--\(name) needs a value (\(spec.valueName))") }
                value = next
            }
            if spec.kind != .repeated, values[name] != nil { throw UsageError(message: "--\(name) is given twice") }
            values[name, default: []].append(value ?? "")
        }
        for spec in options where values[spec.name] == nil {
            if let variable = spec.environment, let value = environment[variable] { values[spec.name] = [value] }
        }
        for spec in options where spec.isRequired && values[spec.name] == nil {
            throw UsageError(message: "missing \(spec.display)")
        }
        guard given.count >= requiredPositionals else { throw UsageError(message: "missing \(positionals[given.count])") }
        return ParsedOptions(table: self, values: values, positionals: given)
    }

    /// The synopsis after the command's name: positionals, then each option (optional ones in brackets).
    package var synopsis: String {
        (positionals + options.map { $0.isRequired ? $0.display : "[\($0.display)]" }).joined(separator: " ")
    }

    /// One line per option, `--name VALUE` and its help in two aligned columns.
    package var optionColumns: [String] {
        let width = options.map { $0.name.count + $0.valueName.count + 4 }.max() ?? 0
        return options.map { "  " + $0.display.padding(toWidth: width) + "  " + $0.help }
    }

    /// Two lines per option: `--name VALUE`, then its help and its environment variable.
    package var optionsWithEnvironment: [String] {
        options.flatMap { option in
            ["  \(option.display)", "      \(option.help) " + (option.environment.map { "[\($0)]" } ?? "[command line only]")]
        }
    }
}

/// The options given to one command, after parsing, the environment fallback and the required check.
/// Lookups take the `OptionSpec` itself; asking for an option the command does not declare traps,
/// so the command's tests catch it.
package struct ParsedOptions: Sendable {
    private let table: OptionTable
    private let values: [String: [String]]
    /// Positional arguments, in order.
    package let positionals: [String]

    fileprivate init(table: OptionTable, values: [String: [String]], positionals: [String]) {
        (self.table, self.values, self.positionals) = (table, values, positionals)
    }

    private func lookup(_ spec: OptionSpec) -> [String]? {
        precondition(table.options.contains(spec), "--\(spec.name) is not an option of this command")
        return values[spec.name]
    }

    /// Whether a switch was given.
    package func flag(_ spec: OptionSpec) -> Bool {
        precondition(spec.isFlag, "--\(spec.name) is not a switch")
        return lookup(spec) != nil
    }

    /// The value of a single-valued option, if given (or set by its environment variable).
    package func value(_ spec: OptionSpec) -> String? {
        precondition(spec.kind == .single, "--\(spec.name) does not take exactly one value")
        return lookup(spec)?.first
    }

    /// Every value of a repeatable option, in order.
    package func values(_ spec: OptionSpec) -> [String] {
        precondition(spec.kind == .repeated, "--\(spec.name) is not repeatable")
        return lookup(spec) ?? []
    }

    /// The value of a required option (parsing already proved it is there).
    package func required(_ spec: OptionSpec) -> String {
        precondition(spec.isRequired, "--\(spec.name) is not a required option")
        guard let value = lookup(spec)?.first else { preconditionFailure("--\(spec.name) passed parsing without a value") }
        return value
    }
}

extension String {
    fileprivate func padding(toWidth width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
