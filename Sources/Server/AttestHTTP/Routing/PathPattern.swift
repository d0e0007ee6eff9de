/// A route's path: literal segments, `{name}` parameters (one non-empty segment each) and, last
/// only, `{name...}` (the rest of the path, possibly empty). Matched on the path as received, not
/// percent-decoded, so a parameter is exactly what the client sent.
struct PathPattern: Sendable, Equatable, CustomStringConvertible {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
        case rest(String)
    }

    let segments: [Segment]
    let description: String
    /// The whole path when every segment is literal (it matches that path alone), nil otherwise.
    var literalPath: String? {
        segments.allSatisfy { if case .literal = $0 { true } else { false } } ? description : nil
    }

    /// The pattern of `text`, e.g. `/admin/v1/integrations/{client_id}/revoke`.
    init(_ text: String) {
        description = text
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        segments = parts.map { part in
            guard part.hasPrefix("{"), part.hasSuffix("}") else { return .literal(String(part)) }
            let name = part.dropFirst().dropLast()
            return name.hasSuffix("...") ? .rest(String(name.dropLast(3))) : .parameter(String(name))
        }
    }

    /// The parameters when `path` matches, nil otherwise.
    func match(_ path: String) -> [String: String]? {
        guard path.first == "/" else { return nil }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var parameters: [String: String] = [:]
        var index = parts.startIndex
        for segment in segments {
            switch segment {
            case .rest(let name):
                guard index < parts.endIndex else { return nil }  // `/console` is not `/console/`
                parameters[name] = parts[index...].joined(separator: "/")
                return parameters
            case .literal(let literal):
                guard index < parts.endIndex, parts[index] == literal else { return nil }
            case .parameter(let name):
                guard index < parts.endIndex, !parts[index].isEmpty else { return nil }
                parameters[name] = String(parts[index])
            }
            index += 1
        }
        return index == parts.endIndex ? parameters : nil
    }
}
