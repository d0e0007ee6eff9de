extension RawHTTPClient {
    /// Sends one request with a body and reads the response (keep-alive).
    package func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws(RawHTTPClientError) -> RawHTTPResponse {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        try send(Array((head + "\r\n").utf8) + body)
        return try receiveResponse()
    }

    /// POSTs a JSON text.
    package func postJSON(_ target: String, _ json: String, headers: [(String, String)] = []) throws(RawHTTPClientError) -> RawHTTPResponse
    {
        try request("POST", target, headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8))
    }
}

extension RawHTTPResponse {
    /// The body as text.
    package var text: String { String(decoding: body, as: UTF8.self) }
}
