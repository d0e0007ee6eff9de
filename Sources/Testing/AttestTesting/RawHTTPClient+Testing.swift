package import AttestSimulator
import Glibc

/// The tests' name for the product's HTTP client: it sends any bytes, malformed ones too.
package typealias RawHTTPClient = HTTPClient
/// The tests' name for a response the client read.
package typealias RawHTTPResponse = HTTPClientResponse
/// The tests' name for a failure of the client.
package typealias RawHTTPClientError = HTTPClientError

/// Helpers only tests use: raw text, minimal requests and watching the server close.
extension HTTPClient {
    /// POSTs a JSON text.
    package func postJSON(_ target: String, _ json: String, headers: [(String, String)] = []) throws(HTTPClientError) -> HTTPClientResponse
    {
        try request("POST", target, headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8))
    }

    /// Sends the UTF-8 bytes of `text`.
    package func send(_ text: String) throws(HTTPClientError) {
        try send(Array(text.utf8))
    }

    /// Sends a minimal GET with `Host`.
    package func sendGET(_ target: String = "/", extraHeaders: String = "") throws(HTTPClientError) {
        try send("GET \(target) HTTP/1.1\r\nHost: test\r\n\(extraHeaders)\r\n")
    }

    /// True when the server has closed the connection (EOF or reset) and sent nothing more.
    package func isClosedByServer() -> Bool {
        guard buffered.isEmpty else { return false }
        return Self.isClosure(receive(maximum: 1))
    }

    /// Reads and drops whatever arrives until the server closes; false if it is still open at the timeout.
    package func discardUntilClosed() -> Bool {
        discardBuffered()
        while true {
            let receipt = receive(maximum: 16_384)
            if Self.isClosure(receipt) { return true }
            if case .failed = receipt { return false }
        }
    }

    private static func isClosure(_ receipt: HTTPClientReceipt) -> Bool {
        switch receipt {
        case .endOfStream: true
        case .failed(let code): code == ECONNRESET
        case .bytes: false
        }
    }
}

extension HTTPClientResponse {
    /// The body as text.
    package var text: String { String(decoding: body, as: UTF8.self) }
}
