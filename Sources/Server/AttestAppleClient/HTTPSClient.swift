internal import CLibCurl
import Synchronization

/// Why an exchange did not produce an HTTP answer (DNS, connect, TLS, timeout, an oversized body).
package struct HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// libcurl's name for what failed, e.g. `COULDNT_CONNECT`, `OPERATION_TIMEDOUT`, `PEER_FAILED_VERIFICATION`.
    package let code: String
    /// libcurl's sentence for it (never the request's headers or body).
    package let reason: String

    package init(code: String, reason: String) { (self.code, self.reason) = (code, reason) }

    package var description: String { "\(code): \(reason)" }
}

/// An HTTP answer: status, header fields (names lowercased) and body.
package struct HTTPClientResponse: Sendable, Equatable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        (self.status, self.headers, self.body) = (status, headers, body)
    }

    /// The first header named `name` (lowercase).
    package func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    package static func == (lhs: HTTPClientResponse, rhs: HTTPClientResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}

/// A blocking HTTPS client over one libcurl easy handle (kept between requests, so connections and
/// TLS sessions are reused). One request at a time: callers on several threads wait their turn.
///
/// Why libcurl's defaults are kept for TLS: certificate and host-name verification stay on (never
/// disabled, not even for tests, which use plain `http://` on loopback). Redirects are not followed,
/// only `http` and `https` are allowed, and every exchange has a connect and a total timeout.
///
/// `@unchecked Sendable`: the handle is touched only inside `lock`, and freed in `deinit`.
package final class HTTPSClient: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer
    private let lock = Mutex(())
    /// Responses larger than this are abandoned (`RESPONSE_TOO_LARGE`).
    package let maximumBodyBytes: Int
    package let connectTimeoutMilliseconds: Int
    package let totalTimeoutMilliseconds: Int

    // curl_global_init is not thread-safe and must run before any handle exists: once per process.
    private static let globalInit: CURLcode = curl_global_init(CLibCurl_GLOBAL_DEFAULT())

    /// A client with these limits (defaults: connect 5 s, whole exchange 15 s, 256 KiB body).
    package init(
        connectTimeoutMilliseconds: Int = 5_000, totalTimeoutMilliseconds: Int = 15_000, maximumBodyBytes: Int = 256 * 1024
    ) throws(HTTPClientError) {
        guard Self.globalInit == CURLE_OK else { throw Self.error(Self.globalInit) }
        guard let handle = curl_easy_init() else { throw HTTPClientError(code: "FAILED_INIT", reason: "curl_easy_init returned NULL") }
        self.handle = handle
        self.maximumBodyBytes = maximumBodyBytes
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.totalTimeoutMilliseconds = totalTimeoutMilliseconds
    }

    deinit { curl_easy_cleanup(handle) }

    /// POSTs `body` to `url` with `headers` ("Name: value" lines) and returns the answer, whatever
    /// its status; throws only when no answer came.
    package func post(url: String, headers: [String], body: [UInt8]) throws(HTTPClientError) -> HTTPClientResponse {
        try lock.withLock { _ throws(HTTPClientError) in try perform(url: url, headers: headers, body: body) }
    }

    private func perform(url: String, headers: [String], body: [UInt8]) throws(HTTPClientError) -> HTTPClientResponse {
        curl_easy_reset(handle)
        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        // "Expect:" removes libcurl's Expect: 100-continue (a round trip for nothing on a small body).
        for line in headers + ["Expect:"] {
            guard let appended = curl_slist_append(list, line) else {
                throw HTTPClientError(code: "OUT_OF_MEMORY", reason: "curl_slist_append failed")
            }
            list = appended
        }
        let sink = ResponseSink(limit: maximumBodyBytes)
        let context = Unmanaged.passUnretained(sink).toOpaque()
        try withExtendedLifetime(sink) { () throws(HTTPClientError) in
            try check(CLibCurl_setopt_string(handle, CURLOPT_URL, url))
            try check(CLibCurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
            try check(CLibCurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
            // Why: libcurl otherwise uses signals for DNS timeouts, which is unsafe in a threaded process.
            try check(CLibCurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
            try check(CLibCurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutMilliseconds))
            try check(CLibCurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, totalTimeoutMilliseconds))
            try check(CLibCurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
            try check(CLibCurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
            try check(CLibCurl_setopt_long(handle, CURLOPT_POST, 1))
            try check(CLibCurl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            // COPYPOSTFIELDS: libcurl keeps its own copy, so the Swift array need not outlive this call.
            if body.isEmpty {
                try check(CLibCurl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, ""))
            } else {
                let code = body.withUnsafeBytes { raw in
                    CLibCurl_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
                }
                try check(code)
            }
            try check(CLibCurl_setopt_slist(handle, CURLOPT_HTTPHEADER, list))
            try check(CLibCurl_setopt_callback(handle, CURLOPT_WRITEFUNCTION, responseBodyCallback))
            try check(CLibCurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context))
            try check(CLibCurl_setopt_callback(handle, CURLOPT_HEADERFUNCTION, responseHeaderCallback))
            try check(CLibCurl_setopt_pointer(handle, CURLOPT_HEADERDATA, context))
            let result = curl_easy_perform(handle)
            if sink.overflowed {
                throw HTTPClientError(code: "RESPONSE_TOO_LARGE", reason: "the answer exceeded \(maximumBodyBytes) bytes")
            }
            try check(result)
        }
        var status = 0
        try check(CLibCurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status))
        return HTTPClientResponse(status: status, headers: sink.headers, body: sink.body)
    }

    private func check(_ code: CURLcode) throws(HTTPClientError) {
        guard code == CURLE_OK else { throw Self.error(code) }
    }

    private static func error(_ code: CURLcode) -> HTTPClientError {
        let reason = curl_easy_strerror(code).map { String(cString: $0) } ?? "unknown libcurl error"
        return HTTPClientError(code: name(code), reason: reason)
    }

    /// The stable names operators see in logs for the failures that matter; others by number.
    private static func name(_ code: CURLcode) -> String {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST: "COULDNT_RESOLVE_HOST"
        case CURLE_COULDNT_CONNECT: "COULDNT_CONNECT"
        case CURLE_OPERATION_TIMEDOUT: "OPERATION_TIMEDOUT"
        case CURLE_PEER_FAILED_VERIFICATION: "PEER_FAILED_VERIFICATION"
        case CURLE_SSL_CONNECT_ERROR: "SSL_CONNECT_ERROR"
        case CURLE_SEND_ERROR: "SEND_ERROR"
        case CURLE_RECV_ERROR: "RECV_ERROR"
        case CURLE_GOT_NOTHING: "GOT_NOTHING"
        case CURLE_UNSUPPORTED_PROTOCOL: "UNSUPPORTED_PROTOCOL"
        case CURLE_URL_MALFORMAT: "URL_MALFORMAT"
        default: "CURLE_\(code.rawValue)"
        }
    }
}

/// Collects one response's header lines and body; refuses to grow past `limit`.
private final class ResponseSink {
    let limit: Int
    var body: [UInt8] = []
    var headers: [(name: String, value: String)] = []
    var overflowed = false

    init(limit: Int) {
        self.limit = limit
    }
}

// C callbacks are plain functions (STYLE: closures in some contexts carry actor isolation).
// Returning anything but `size * count` makes libcurl abort the transfer.
private func responseBodyCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?)
    -> Int
{
    guard let data, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    guard sink.body.count + length <= sink.limit else {
        sink.overflowed = true
        return 0
    }
    data.withMemoryRebound(to: UInt8.self, capacity: length) { sink.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length)) }
    return length
}

private func responseHeaderCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?)
    -> Int
{
    guard let data, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
    if line.hasPrefix("HTTP/") {
        sink.headers.removeAll()  // a new status line (after a 100 Continue): a new header block
    } else if let colon = line.firstIndex(of: ":"), sink.headers.count < 100 {
        let name = line[..<colon].lowercased()
        let value = String(
            line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }.reversed().drop(while: \.isWhitespace).reversed())
        sink.headers.append((name, value))
    }
    return length
}
