internal import COpenSSL

/// Reads and clears OpenSSL's thread-local error queue, so that one failure never leaks into the
/// next call's diagnosis.
enum OpenSSLErrorQueue {
    /// Drains the queue into one line, e.g. "error:1E08010C:DECODER routines::unsupported".
    static func drain() -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if messages.count < 4 { messages.append(text(code)) }
        }
        return messages.isEmpty ? "no OpenSSL detail" : messages.joined(separator: "; ")
    }

    /// Drains the queue; returns the reason codes of its CMS-library entries (e.g.
    /// `CMS_R_CERTIFICATE_VERIFY_ERROR`) and the same one-line text as `drain()`.
    static func drainCMSReasons() -> (reasons: Set<Int32>, message: String) {
        var reasons: Set<Int32> = []
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if ERR_GET_LIB(code) == ERR_LIB_CMS { reasons.insert(ERR_GET_REASON(code)) }
            if messages.count < 4 { messages.append(text(code)) }
        }
        return (reasons, messages.isEmpty ? "no OpenSSL detail" : messages.joined(separator: "; "))
    }

    private static func text(_ code: UInt) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Builds a `CryptoError` whose reason names the failed call and OpenSSL's diagnosis.
    static func error(
        _ code: CryptoError.Code, _ operation: String, file: String = #fileID, line: Int = #line
    ) -> CryptoError {
        CryptoError(code, "\(operation) failed (\(drain()))", file: file, line: line)
    }
}
