import Glibc

/// A failure of the client itself (connect, send, receive, or an unparsable answer).
package struct HTTPClientError: Error, CustomStringConvertible {
    package let description: String

    package init(_ description: String) {
        self.description = description
    }

    /// `operation` failed with the C error number `code` (the current `errno` unless given).
    package static func errno(_ operation: String, code: Int32 = Glibc.errno) -> Self {
        Self("\(operation): \(String(cString: strerror(code)))")
    }
}

/// One HTTP response as read off the wire.
package struct HTTPClientResponse {
    package let status: Int
    package let headers: [(name: String, value: String)]
    package let body: [UInt8]

    package init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        (self.status, self.headers, self.body) = (status, headers, body)
    }

    /// The first value of a header, by case-insensitive name.
    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// What one read from the socket got.
package enum HTTPClientReceipt {
    case bytes([UInt8])
    /// The server closed the connection in order (EOF).
    case endOfStream
    /// The read failed with this `errno`: `EAGAIN` when nothing arrived before the receive
    /// timeout, `ECONNRESET` when the server reset the connection.
    case failed(code: Int32)
}

/// One blocking TCP connection to an HTTP/1.1 server, given by IPv4 or IPv6 literal: it sends
/// bytes as they are and reads `Content-Length` responses (what attestd sends).
///
/// Every receive gives up after `receiveTimeoutSeconds`, so a server that never answers is a
/// failure, not a hang. Sends use MSG_NOSIGNAL: a server that closes early must not SIGPIPE us.
package final class HTTPClient {
    private let socketDescriptor: Int32
    /// Bytes received and not yet part of a returned response.
    package private(set) var buffered: [UInt8] = []

    package init(host: String = "127.0.0.1", port: UInt16, receiveTimeoutSeconds: Int = 5) throws(HTTPClientError) {
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
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw HTTPClientError("bad host \(host)") }
            connected = Self.connect(descriptor, to: address)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw HTTPClientError("bad host \(host)") }
            connected = Self.connect(descriptor, to: address)
        }
        guard connected == 0 else { throw .errno("connect") }
    }

    deinit { close(socketDescriptor) }

    /// `connect(2)` with a `sockaddr_in` or `sockaddr_in6`.
    private static func connect<Address>(_ descriptor: Int32, to address: Address) -> Int32 {
        withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<Address>.size)) }
        }
    }

    /// Sends one request and reads its response (the connection stays open).
    package func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws(HTTPClientError) -> HTTPClientResponse {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        try send(Array((head + "\r\n").utf8) + body)
        return try receiveResponse()
    }

    /// Sends every byte or throws.
    package func send(_ bytes: [UInt8]) throws(HTTPClientError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(socketDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw .errno("send") }
            offset += sent
        }
    }

    /// Reads one response: status line, headers, then a `Content-Length` body (MHD sends buffer
    /// responses with a length, never chunked).
    package func receiveResponse() throws(HTTPClientError) -> HTTPClientResponse {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int?
        while headerEnd == nil {
            headerEnd = buffered.firstRange(of: terminator)?.upperBound
            if headerEnd == nil { try fill() }
        }
        guard let headerEnd else { throw HTTPClientError("unreachable") }
        let head = String(decoding: buffered[..<(headerEnd - 4)], as: UTF8.self)
        buffered.removeFirst(headerEnd)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw HTTPClientError("bad status line in \(head)")
        }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingSpaceAndTab())
        }
        let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        while buffered.count < length { try fill() }
        let body = Array(buffered.prefix(length))
        buffered.removeFirst(length)
        return HTTPClientResponse(status: status, headers: headers, body: body)
    }

    /// One read of at most `maximum` bytes from the socket, past the buffer (which it leaves alone).
    package func receive(maximum: Int) -> HTTPClientReceipt {
        var chunk = [UInt8](repeating: 0, count: maximum)
        let received = chunk.withUnsafeMutableBytes { recv(socketDescriptor, $0.baseAddress, $0.count, 0) }
        if received == 0 { return .endOfStream }
        if received < 0 { return .failed(code: errno) }
        return .bytes(Array(chunk[..<received]))
    }

    /// Drops what the buffer holds.
    package func discardBuffered() { buffered = [] }

    private func fill() throws(HTTPClientError) {
        switch receive(maximum: 16_384) {
        case .bytes(let bytes): buffered.append(contentsOf: bytes)
        case .endOfStream: throw HTTPClientError("connection closed by server")
        case .failed(let code): throw .errno("recv", code: code)
        }
    }
}

extension String {
    fileprivate func trimmingSpaceAndTab() -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(drop(while: blank).reversed().drop(while: blank).reversed())
    }
}
