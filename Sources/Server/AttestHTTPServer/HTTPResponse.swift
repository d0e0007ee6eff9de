/// The answer a responder gives; the server adds `Content-Length` (and `Date`) itself.
package struct HTTPResponse: Sendable {
    /// The status code, 100...999 (libmicrohttpd refuses others; the server then answers 500).
    package var status: Int
    /// Header fields, sent in this order. A `Connection: close` field makes the server close the
    /// connection after this response. `Content-Length` must not be set.
    package var headers: [HTTPHeader]
    /// The body, copied into libmicrohttpd's buffer when the response is queued.
    package var body: [UInt8]

    /// Makes a response.
    package init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        (self.status, self.headers, self.body) = (status, headers, body)
    }
}
