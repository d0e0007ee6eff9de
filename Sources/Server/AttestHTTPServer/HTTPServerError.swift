package import AttestErrors

/// The one error type of AttestHTTPServer: a closed code, a sentence for humans, and where it was thrown.
///
/// Two errors are equal when their codes are equal, so tests pin the code and not the wording.
package typealias HTTPServerError = CodedError<HTTPServerErrorCode>

/// The stable, closed set of failure kinds.
package enum HTTPServerErrorCode: String, ErrorCode {
    /// A configuration value is out of range or the host is not an IP address literal.
    case invalidConfiguration = "invalid_configuration"
    /// The listen socket could not be bound (address in use, not local, or not permitted).
    case bindFailed = "bind_failed"
    /// libmicrohttpd refused to start for another reason.
    case startFailed = "start_failed"
}

extension HTTPServerError {
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
}
