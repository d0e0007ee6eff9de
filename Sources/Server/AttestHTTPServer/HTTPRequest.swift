/// A complete HTTP request as the server received it: the body is fully read before a responder sees it.
package struct HTTPRequest: Sendable {
    /// The method token as received (`GET`, `POST`, ...), not normalised.
    package let method: String
    /// The request target up to the first `?`, as received: not percent-decoded, so routing sees
    /// exactly the bytes the client sent.
    package let path: String
    /// The raw text after the first `?`, or nil when the target has no `?`.
    package let query: String?
    /// Header fields in the order received, names spelled as received.
    package let headers: [HTTPHeader]
    /// The request body (empty when there is none); never longer than the configured maximum.
    package let body: [UInt8]
    /// The peer's IP address in text form (`127.0.0.1`, `::1`).
    package let remoteAddress: String

    /// Makes a request; the server builds these, tests build them to call a responder without a socket.
    package init(
        method: String, path: String, query: String? = nil, headers: [HTTPHeader] = [], body: [UInt8] = [],
        remoteAddress: String = "127.0.0.1"
    ) {
        (self.method, self.path, self.query, self.headers, self.body, self.remoteAddress) = (
            method, path, query, headers, body, remoteAddress
        )
    }

    /// Makes a request from a raw request target, splitting off the query at the first `?`.
    package init(method: String, target: String, headers: [HTTPHeader], body: [UInt8], remoteAddress: String) {
        if let mark = target.firstIndex(of: "?") {
            self.init(
                method: method, path: String(target[..<mark]), query: String(target[target.index(after: mark)...]),
                headers: headers, body: body, remoteAddress: remoteAddress)
        } else {
            self.init(method: method, path: target, query: nil, headers: headers, body: body, remoteAddress: remoteAddress)
        }
    }

    /// The value of the first header named `name` (ASCII case-insensitive), or nil.
    package func header(_ name: String) -> String? {
        headers.first { $0.name.equalsHeaderName(name) }?.value
    }

    /// Every value of headers named `name` (ASCII case-insensitive), in order: use it to reject duplicates.
    package func headerValues(_ name: String) -> [String] {
        headers.compactMap { $0.name.equalsHeaderName(name) ? $0.value : nil }
    }
}
