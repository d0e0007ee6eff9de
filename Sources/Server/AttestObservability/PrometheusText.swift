/// Prometheus's text exposition format (version 0.0.4), written in one place: each metric family
/// with its `# HELP` and `# TYPE` lines, then its samples, every label value escaped.
///
/// Why escape here rather than trust callers: label values can come from requests (a client ID)
/// or the store, and one unescaped `"` or newline lets that value forge whole lines of the scrape,
/// such as `attestd_up 0` (decision 0020).
package struct PrometheusText: Sendable {
    /// A metric family's type.
    package enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// The text so far.
    package private(set) var text = ""

    package init() {}

    /// Starts a family: its HELP and TYPE lines.
    package mutating func family(_ name: String, _ kind: Kind, help: String) {
        text += "# HELP \(name) \(Self.escapedHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
    }

    /// One sample line: `name{label="value",...} value`.
    package mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: String) {
        line(name, labels.map { ($0.key, $0.value) }, value)
    }

    /// One sample with a whole-number value.
    package mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: some BinaryInteger) {
        sample(name, labels, String(value))
    }

    /// One sample without labels.
    package mutating func sample(_ name: String, _ value: some BinaryInteger) {
        sample(name, [:], String(value))
    }

    /// One sample with a floating-point value (`NaN`, `+Inf` and `-Inf` as Prometheus spells them).
    package mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: Double) {
        let text: String
        if value.isNaN {
            text = "NaN"
        } else if value.isInfinite {
            text = value > 0 ? "+Inf" : "-Inf"
        } else {
            text = String(value)
        }
        sample(name, labels, text)
    }

    /// One sample with a floating-point value and no labels.
    package mutating func sample(_ name: String, _ value: Double) {
        sample(name, [:], value)
    }

    /// A histogram's samples: one `_bucket` per upper bound (`counts[i]` observations at or below
    /// `bounds[i]`, cumulative), `+Inf`, `_sum` and `_count`; `labels` are added to each line.
    package mutating func histogram(
        _ name: String, labels: [(String, String)] = [], bounds: [String], counts: [UInt64], sum: String, count: UInt64
    ) {
        for (bound, bucketCount) in zip(bounds, counts) {
            line(name + "_bucket", labels + [("le", bound)], String(bucketCount))
        }
        line(name + "_bucket", labels + [("le", "+Inf")], String(count))
        line(name + "_sum", labels, sum)
        line(name + "_count", labels, String(count))
    }

    /// Appends another writer's families.
    package mutating func append(_ other: PrometheusText) {
        text += other.text
    }

    private mutating func line(_ name: String, _ labels: [(String, String)], _ value: String) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(Self.escapedLabelValue($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + value + "\n"
    }

    /// A label value as the format requires: `\` as `\\`, `"` as `\"`, a line feed as `\n`.
    /// Other control characters, which the format allows but no one wants in a label, become `?`.
    package static func escapedLabelValue(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 || $0 < 0x20 || $0 == 0x7F }) else { return value }
        var escaped = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: escaped += "?"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// HELP text as the format requires: `\` as `\\`, a line feed as `\n`.
    static func escapedHelp(_ help: String) -> String {
        help.replacingBackslashesAndNewlines()
    }
}

extension String {
    fileprivate func replacingBackslashesAndNewlines() -> String {
        guard utf8.contains(where: { $0 == 0x5C || $0 == 0x0A }) else { return self }
        var escaped = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
