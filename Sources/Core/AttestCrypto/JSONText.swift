/// One JSON value to write. Members of an object keep the order they are given in. Not
/// `indirect`: arrays and objects hold their elements in an array's storage already, and an
/// indirect enum put every value, a string or a number too, in a heap box of its own.
package enum JSONValue: Sendable, Equatable {
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
        String(decoding: bytes(value, pretty: pretty), as: UTF8.self)
    }

    /// `value` as the UTF-8 bytes of its JSON text (an HTTP body). Built as bytes: appending to a
    /// String checks its flags and capacity on every append, which was most of an answer's cost.
    package static func bytes(_ value: JSONValue, pretty: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
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
        var bytes: [UInt8] = []
        appendString(value, to: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `value` as a JSON string literal, as UTF-8 bytes.
    package static func appendString(_ value: String, to out: inout [UInt8]) {
        out += "\""
        // Fast path: nearly every value needs no escaping.
        if needsNoEscaping(value) {
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
            default: out += String(scalar)
            }
        }
        out += "\""
    }

    /// Whether `value` is written between the quotes as it is: no quote, backslash or control
    /// character (checked over the string's own bytes).
    private static func needsNoEscaping(_ value: String) -> Bool {
        func plain(_ byte: UInt8) -> Bool { byte >= 0x20 && byte != 0x22 && byte != 0x5C && byte != 0x7F }
        return value.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(plain) } ?? value.utf8.allSatisfy(plain)
    }

    private static func write(_ value: JSONValue, to out: inout [UInt8], pretty: Bool, depth: Int) {
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
        _ open: String, _ close: String, _ elements: [Element], to out: inout [UInt8], pretty: Bool, depth: Int,
        _ element: (Element, inout [UInt8]) -> Void
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

extension [UInt8] {
    /// Appends the UTF-8 bytes of `text` (the JSON writer's one way of adding text).
    fileprivate static func += (bytes: inout [UInt8], text: String) { bytes.append(contentsOf: text.utf8) }
}
