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
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            if messages.count < 4 {
                messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return messages.isEmpty ? "no OpenSSL detail" : messages.joined(separator: "; ")
    }

    /// Builds a `CryptoError` whose reason names the failed call and OpenSSL's diagnosis.
    static func error(
        _ code: CryptoError.Code, _ operation: String, file: String = #fileID, line: Int = #line
    ) -> CryptoError {
        CryptoError(code, "\(operation) failed (\(drain()))", file: file, line: line)
    }
}
