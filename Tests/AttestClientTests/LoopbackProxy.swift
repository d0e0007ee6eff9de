import AttestTesting
import Foundation
import Glibc
import Synchronization

/// A TCP proxy on 127.0.0.1 in front of attestd that can lose an answer: it passes bytes both
/// ways, and when armed, lets the next request that starts with a given prefix through to
/// attestd (which does the work), then resets the client's connection instead of passing
/// attestd's answer on, as a dropped mobile connection does.
final class LoopbackProxy: Sendable {
    let port: UInt16
    private let listener: Int32
    private let upstreamPort: UInt16
    /// The request prefix whose answers to lose, and how many more.
    private let armed = Mutex<(prefix: String, count: Int)>(("", 0))
    private let lostCount = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    init(upstreamPort: UInt16) throws {
        self.upstreamPort = upstreamPort
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { bind(listener, UnsafeRawPointer($0).assumingMemoryBound(to: sockaddr.self), length) }
        guard listener >= 0, bound == 0, listen(listener, 64) == 0 else { throw ProxyError(description: "cannot listen") }
        _ = withUnsafeMutablePointer(to: &address) {
            getsockname(listener, UnsafeMutableRawPointer($0).assumingMemoryBound(to: sockaddr.self), &length)
        }
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in
            while !stopped.load(ordering: .relaxed) {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { continue }
                Thread { self.serve(client) }.start()
            }
        }.start()
    }

    struct ProxyError: Error, CustomStringConvertible {
        let description: String
    }

    /// Loses the answers to the next `count` requests that start with `prefix` (e.g. `POST /v1/attest`).
    func loseAnswers(to prefix: String, count: Int = 1) { armed.withLock { $0 = (prefix, count) } }

    /// How many answers were lost so far.
    var lostAnswers: Int { lostCount.load(ordering: .relaxed) }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    deinit { if !stopped.load(ordering: .relaxed) { stop() } }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func serve(_ client: Int32) {
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: upstreamPort)
        let connected = withUnsafePointer(to: &address) {
            connect(upstream, UnsafeRawPointer($0).assumingMemoryBound(to: sockaddr.self), socklen_t(MemoryLayout<sockaddr_in>.size))
        }
        guard upstream >= 0, connected == 0 else {
            close(client)
            if upstream >= 0 { close(upstream) }
            return
        }
        // Set by the request side when the answer to the request it just passed on is to be lost.
        let losing = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = recv(upstream, &buffer, buffer.count, 0)
                guard count > 0 else { break }
                if losing.load(ordering: .acquiring) {
                    // attestd answered; the client gets a reset instead. (Not a partial answer:
                    // FoundationNetworking on Linux traps on a status line cut short.)
                    var reset = linger(l_onoff: 1, l_linger: 0)
                    setsockopt(client, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
                    self.lostCount.add(1, ordering: .relaxed)
                    break
                }
                guard Self.sendAll(client, buffer[..<count]) else { break }
            }
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(upstream, Int32(SHUT_RDWR))
            done.signal()
        }.start()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(client, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            let head = String(decoding: buffer[..<min(count, 64)], as: UTF8.self)
            let lose = armed.withLock { armed -> Bool in
                guard armed.count > 0, head.hasPrefix(armed.prefix) else { return false }
                armed.count -= 1
                return true
            }
            if lose { losing.store(true, ordering: .releasing) }
            guard Self.sendAll(upstream, buffer[..<count]) else { break }
        }
        shutdown(upstream, Int32(SHUT_RDWR))
        done.wait()
        close(client)
        close(upstream)
    }

    private static func sendAll(_ socket: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let sent = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }
}

/// A TCP server on 127.0.0.1 that answers every request with the same bytes (after reading the
/// request's head), as a broken or hostile server in attestd's place would.
final class CannedServer: Sendable {
    let port: UInt16
    private let listener: SilentListener

    init(answer: [UInt8]) throws {
        listener = try SilentListener()
        port = listener.port
        let descriptor = listener.descriptor
        Thread {
            while true {
                let client = accept(descriptor, nil, nil)
                guard client >= 0 else { return }
                Thread {
                    var head: [UInt8] = []
                    var byte: UInt8 = 0
                    while read(client, &byte, 1) == 1 {
                        head.append(byte)
                        if head.suffix(4) == [13, 10, 13, 10] { break }
                    }
                    var sent = 0
                    while sent < answer.count {
                        let count = answer[sent...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                        guard count > 0 else { break }
                        sent += count
                    }
                    close(client)
                }.start()
            }
        }.start()
    }

    /// An HTTP/1.1 200 answer with a JSON `body`.
    static func ok(_ body: [UInt8]) -> [UInt8] {
        Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
    }
}
