/// One JSON value to write. Members of an object keep the order they are given in.
package indirect enum JSONValue: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([Member])

    /// One member of an object.
    package struct Member: Sendable, Equatable {
        package let key: String
        package let value: JSONValue

        /// A member `key: value`.
        package init(_ key: String, _ value: JSONValue) { (self.key, self.value) = (key, value) }
    }

    /// A value from a Swift value: strings, integers, floating point, booleans, nil, arrays of
    /// those, and `JSONValue` itself; anything else is written as its description (a string).
    package init(_ value: (any Sendable)?) {
        self.init(anything: value)
    }

    private init(anything value: Any?) {
        switch value {
        case let json as JSONValue: self = json
        case let text as String: self = .string(text)
        case let number as Int: self = .integer(Int64(number))
        case let number as Int64: self = .integer(number)
        case let number as UInt32: self = .integer(Int64(number))
        case let number as Double: self = .number(number)
        case let flag as Bool: self = .bool(flag)
        case let list as [String]: self = .array(list.map(JSONValue.string))
        case let list as [JSONValue]: self = .array(list)
        case nil: self = .null
        case let other?:
            // An Optional inside the existential (a nil Int? member) is null, or its wrapped value.
            let mirror = Mirror(reflecting: other)
            if mirror.displayStyle == .optional {
                self = mirror.children.first.map { JSONValue(anything: $0.value) } ?? .null
            } else {
                self = .string(String(describing: other))
            }
        }
    }

    /// An object of `members`, in order.
    package static func object(_ members: [(String, any Sendable)]) -> JSONValue {
        .object(members.map { Member($0.0, JSONValue($0.1)) })
    }
}

/// The one JSON writer of attestd: log lines, API bodies, attestctl's `--json` output and the
/// simulator's requests. Written directly, without Foundation: Foundation's JSONSerialization
/// cost about half of a request's CPU when it ran on every request.
package enum JSONText {
    /// `value` as JSON text: compact, or `pretty` (two-space indent, `"key" : value`, as
    /// Foundation's encoder prints).
    package static func render(_ value: JSONValue, pretty: Bool = false) -> String {
        var out = ""
        // Room for an API answer (introspection's is 162 bytes), so it is not regrown as it is built.
        out.reserveCapacity(256)
        write(value, to: &out, pretty: pretty, depth: 0)
        return out
    }

    /// A compact flat object of `members`, in order.
    package static func object(_ members: [(String, any Sendable)]) -> String {
        render(.object(members))
    }

    /// Appends `value` as a JSON string literal.
    package static func appendString(_ value: String, to out: inout String) {
        out += "\""
        // Fast path: nearly every value needs no escaping.
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C && $0 != 0x7F }) {
            out += value
            out += "\""
            return
        }
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = Hex.encode([UInt8(0), UInt8(scalar.value)])
                out += "\\u" + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    private static func write(_ value: JSONValue, to out: inout String, pretty: Bool, depth: Int) {
        switch value {
        case .string(let text): appendString(text, to: &out)
        case .integer(let number): out += String(number)
        case .number(let number): out += number.isFinite ? String(number) : "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .null: out += "null"
        case .array(let items):
            writeContainer("[", "]", items, to: &out, pretty: pretty, depth: depth) { item, out in
                write(item, to: &out, pretty: pretty, depth: depth + 1)
            }
        case .object(let members):
            writeContainer("{", "}", members, to: &out, pretty: pretty, depth: depth) { member, out in
                appendString(member.key, to: &out)
                out += pretty ? " : " : ":"
                write(member.value, to: &out, pretty: pretty, depth: depth + 1)
            }
        }
    }

    private static func writeContainer<Element>(
        _ open: String, _ close: String, _ elements: [Element], to out: inout String, pretty: Bool, depth: Int,
        _ element: (Element, inout String) -> Void
    ) {
        out += open
        guard !elements.isEmpty else {
            out += close
            return
        }
        for (index, item) in elements.enumerated() {
            if index > 0 { out += "," }
            if pretty { out += "\n" + String(repeating: "  ", count: depth + 1) }
            element(item, &out)
        }
        if pretty { out += "\n" + String(repeating: "  ", count: depth) }
        out += close
    }
}
