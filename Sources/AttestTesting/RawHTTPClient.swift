import Glibc

/// A failure of the test client itself (connect, send, receive, or an unparsable answer).
package struct RawHTTPClientError: Error, CustomStringConvertible {
    package let description: String

    package init(_ description: String) {
        self.description = description
    }

    package static func errno(_ operation: String) -> Self {
        Self("\(operation): \(String(cString: strerror(Glibc.errno)))")
    }
}

/// One HTTP response as read off the wire.
package struct RawHTTPResponse {
    package let status: Int
    package let headers: [(name: String, value: String)]
    package let body: [UInt8]

    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A blocking TCP client that sends any bytes (malformed ones too) and reads HTTP/1.1 responses.
///
/// Every receive gives up after `receiveTimeoutSeconds`, so a server that never answers fails the test
/// instead of hanging it. Sends use MSG_NOSIGNAL: a server that closes early must not SIGPIPE the runner.
package final class RawHTTPClient {
    private let socketDescriptor: Int32
    private var buffered: [UInt8] = []

    package init(host: String = "127.0.0.1", port: UInt16, receiveTimeoutSeconds: Int = 5) throws(RawHTTPClientError) {
        let isIPv6 = host.contains(":")
        let descriptor = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw .errno("socket") }
        socketDescriptor = descriptor
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        guard setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
            throw .errno("setsockopt(SO_RCVTIMEO)")
        }
        let connected: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw RawHTTPClientError("bad host \(host)") }
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw RawHTTPClientError("bad host \(host)") }
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard connected == 0 else { throw .errno("connect") }
    }

    deinit { close(socketDescriptor) }

    /// Sends every byte or throws.
    package func send(_ bytes: [UInt8]) throws(RawHTTPClientError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(socketDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw .errno("send") }
            offset += sent
        }
    }

    /// Sends the UTF-8 bytes of `text`.
    package func send(_ text: String) throws(RawHTTPClientError) {
        try send(Array(text.utf8))
    }

    /// Sends a minimal GET with `Host`.
    package func sendGET(_ target: String = "/", extraHeaders: String = "") throws(RawHTTPClientError) {
        try send("GET \(target) HTTP/1.1\r\nHost: test\r\n\(extraHeaders)\r\n")
    }

    /// Reads one response: status line, headers, then a `Content-Length` body (MHD sends buffer
    /// responses with a length, never chunked).
    package func receiveResponse() throws(RawHTTPClientError) -> RawHTTPResponse {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int?
        while headerEnd == nil {
            headerEnd = buffered.firstRange(of: terminator)?.upperBound
            if headerEnd == nil { try fill() }
        }
        guard let headerEnd else { throw RawHTTPClientError("unreachable") }
        let head = String(decoding: buffered[..<(headerEnd - 4)], as: UTF8.self)
        buffered.removeFirst(headerEnd)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw RawHTTPClientError("bad status line in \(head)")
        }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: " \t"))
        }
        let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        while buffered.count < length { try fill() }
        let body = Array(buffered.prefix(length))
        buffered.removeFirst(length)
        return RawHTTPResponse(status: status, headers: headers, body: body)
    }

    /// True when the server has closed the connection (EOF or reset) and sent nothing more.
    package func isClosedByServer() -> Bool {
        guard buffered.isEmpty else { return false }
        var byte: UInt8 = 0
        let received = recv(socketDescriptor, &byte, 1, 0)
        return received == 0 || (received < 0 && errno == ECONNRESET)
    }

    /// Reads and drops whatever arrives until the server closes; false if it is still open at the timeout.
    package func discardUntilClosed() -> Bool {
        buffered = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let received = chunk.withUnsafeMutableBytes { recv(socketDescriptor, $0.baseAddress, $0.count, 0) }
            if received == 0 || (received < 0 && errno == ECONNRESET) { return true }
            if received < 0 { return false }
        }
    }

    private func fill() throws(RawHTTPClientError) {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let received = chunk.withUnsafeMutableBytes { recv(socketDescriptor, $0.baseAddress, $0.count, 0) }
        if received < 0 { throw .errno("recv") }
        if received == 0 { throw RawHTTPClientError("connection closed by server") }
        buffered.append(contentsOf: chunk[..<received])
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        return String(drop { characters.contains($0) }.reversed().drop { characters.contains($0) }.reversed())
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String { String(self).trimmingCharacters(in: set) }
}
