/// The one error type of AttestHTTPServer: a closed code, a sentence for humans, and where it was thrown.
///
/// Two errors are equal when their codes are equal, so tests pin the code and not the wording.
package struct HTTPServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable, closed set of failure kinds.
    package enum Code: String, Sendable, Hashable {
        /// A configuration value is out of range or the host is not an IP address literal.
        case invalidConfiguration = "invalid_configuration"
        /// The listen socket could not be bound (address in use, not local, or not permitted).
        case bindFailed = "bind_failed"
        /// libmicrohttpd refused to start for another reason.
        case startFailed = "start_failed"
    }

    /// What failed.
    package let code: Code
    /// A sentence for humans; not stable, do not match on it.
    package let reason: String
    /// The `#fileID` that threw.
    package let file: String
    /// The line that threw.
    package let line: Int

    /// Makes an error; prefer the static factories named after the code.
    package init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    /// A configuration value is out of range.
    package static func invalidConfiguration(_ reason: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(.invalidConfiguration, reason, file: file, line: line)
    }

    /// The listen socket could not be bound.
    package static func bindFailed(_ reason: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(.bindFailed, reason, file: file, line: line)
    }

    /// libmicrohttpd refused to start.
    package static func startFailed(_ reason: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(.startFailed, reason, file: file, line: line)
    }

    /// `code: reason`.
    package var description: String { "\(code.rawValue): \(reason)" }

    /// Equality on the code only.
    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, to agree with `==`.
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
