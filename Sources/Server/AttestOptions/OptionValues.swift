/// Typed option values: a number is parsed, and its refusal worded, in this one place (as
/// swift-argument-parser's `@Option var count: Int`), whether the text came from the command line
/// or from an environment variable.
extension OptionSpec {
    /// `text` as a whole number within `range`: decimal digits only (a leading `-` only where the
    /// range allows negative numbers), no spaces, no `+`. Refused with "--NAME takes L to U" (or
    /// "at least L" when the range has no top), `unit` after the range.
    package func integer<T: FixedWidthInteger>(_ text: String, in range: ClosedRange<T>, unit: String = "") throws(UsageError) -> T {
        let digits = range.lowerBound < 0 && text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = T(text, radix: 10), range.contains(value)
        else {
            let bounds = range.upperBound == T.max ? "at least \(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
            throw UsageError(message: "--\(name) takes \(bounds)\(unit)")
        }
        return value
    }

    /// The value of the choice `text` names, among `choices` (spelling and value, in the order the
    /// refusal lists them: "--NAME takes a, b or c, not 'x'").
    package func choice<T>(_ text: String, among choices: KeyValuePairs<String, T>) throws(UsageError) -> T {
        if let found = choices.first(where: { $0.key == text }) { return found.value }
        let names = choices.map(\.key)
        let listed = names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "")
        throw UsageError(message: "--\(name) takes \(listed), not '\(text)'")
    }

    /// `text` as a finite decimal number of at least `minimum` (`5`, `0.5`, `1e3`).
    package func decimal(_ text: String, atLeast minimum: Double) throws(UsageError) -> Double {
        guard let value = Double(text), value.isFinite, value >= minimum, !text.contains(where: \.isWhitespace) else {
            throw UsageError(message: "--\(name) takes a number of at least \(Self.shown(minimum))")
        }
        return value
    }

    private static func shown(_ number: Double) -> String {
        number == number.rounded() ? String(Int64(number)) : String(number)
    }
}

extension ParsedOptions {
    /// The option's whole number within `range`; nil when it was not given.
    package func integer<T: FixedWidthInteger>(_ spec: OptionSpec, in range: ClosedRange<T>, unit: String = "") throws(UsageError) -> T? {
        guard let text = value(spec) else { return nil }
        return try spec.integer(text, in: range, unit: unit)
    }

    /// The option's choice among `choices`; nil when it was not given.
    package func choice<T>(_ spec: OptionSpec, among choices: KeyValuePairs<String, T>) throws(UsageError) -> T? {
        guard let text = value(spec) else { return nil }
        return try spec.choice(text, among: choices)
    }

    /// The option's decimal number of at least `minimum`; nil when it was not given.
    package func decimal(_ spec: OptionSpec, atLeast minimum: Double) throws(UsageError) -> Double? {
        guard let text = value(spec) else { return nil }
        return try spec.decimal(text, atLeast: minimum)
    }
}
