import Foundation
import Glibc
import Synchronization

/// A loopback TCP proxy in front of a real server that can go silent, for tests of a database
/// that stops answering without closing anything (decision 0015): until `silence()` it forwards
/// both ways; from then on it forwards nothing, in either direction, while it keeps every
/// connection open, keeps reading (so the kernel acknowledges whatever is sent) and accepts new
/// connections without connecting them anywhere. That is what a hung server or a stalled proxy
/// looks like to a client, and what TCP keepalives cannot notice. `speak()` forwards new
/// connections again (the server is back); those open during the silence stay silent.
///
/// One thread polls every socket; `close()` (or deinit) ends it and closes them all, bounded by
/// the 50 ms poll interval.
package final class SilentProxy: Sendable {
    /// The port it listens on, on 127.0.0.1.
    package let port: UInt16
    private let flags = Flags()
    private let finished = DispatchSemaphore(value: 0)

    /// What the proxy's thread reads, apart from the proxy (so deinit can end the thread).
    private final class Flags: Sendable {
        let silent = Atomic<Bool>(false)
        let stopped = Atomic<Bool>(false)
    }

    /// Listens on a free loopback port and forwards to `upstreamPort` on 127.0.0.1.
    package init(upstreamPort: UInt16) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw ProxyError("socket: errno \(errno)") }
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        guard bound == 0, listen(listener, 64) == 0 else {
            Glibc.close(listener)
            throw ProxyError("bind or listen: errno \(errno)")
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        let loop = Loop(listener: listener, upstreamPort: upstreamPort)
        let thread = Thread { [flags, finished] in
            loop.run(flags)
            finished.signal()
        }
        thread.start()
    }

    deinit { close() }

    /// From now on nothing is forwarded, in either direction, and nothing is closed.
    package func silence() { flags.silent.store(true, ordering: .sequentiallyConsistent) }

    /// From now on new connections are forwarded again (the ones accepted or silenced before
    /// stay silent): the server is back.
    package func speak() { flags.silent.store(false, ordering: .sequentiallyConsistent) }

    /// Closes every connection and the listener, and ends the thread (idempotent).
    package func close() {
        guard !flags.stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        finished.wait()
    }

    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return address
    }

    /// Why the proxy could not start.
    package struct ProxyError: Error, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// The sockets, owned by the proxy's thread alone.
    private final class Loop: @unchecked Sendable {
        // @unchecked: made before the thread starts and used by that thread only.
        let listener: Int32
        let upstreamPort: UInt16
        /// Each socket and the one it forwards to (-1: none, for connections accepted while silent).
        var peers: [Int32: Int32] = [:]
        /// Sockets open while the proxy was silent: they stay silent.
        var silenced: Set<Int32> = []

        init(listener: Int32, upstreamPort: UInt16) {
            self.listener = listener
            self.upstreamPort = upstreamPort
        }

        func run(_ flags: Flags) {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while !flags.stopped.load(ordering: .sequentiallyConsistent) {
                var descriptors = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
                descriptors += peers.keys.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                guard poll(&descriptors, nfds_t(descriptors.count), 50) > 0 else { continue }
                let quiet = flags.silent.load(ordering: .sequentiallyConsistent)
                // A connection that saw the silence never speaks again (its protocol state is lost).
                if quiet { silenced.formUnion(peers.keys) }
                for descriptor in descriptors where descriptor.revents != 0 {
                    if descriptor.fd == listener {
                        accept(quiet: quiet)
                        continue
                    }
                    guard let peer = peers[descriptor.fd] else { continue }
                    let count = recv(descriptor.fd, &buffer, buffer.count, 0)
                    if count <= 0 {
                        drop(descriptor.fd)
                    } else if !quiet && peer >= 0 && !silenced.contains(descriptor.fd) {
                        _ = buffer.withUnsafeBytes { send(peer, $0.baseAddress, count, Int32(MSG_NOSIGNAL)) }
                    }
                }
            }
            for fd in peers.keys { Glibc.close(fd) }
            Glibc.close(listener)
        }

        private func accept(quiet: Bool) {
            let client = Glibc.accept(listener, nil, nil)
            guard client >= 0 else { return }
            guard !quiet else {
                peers[client] = -1
                return
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = SilentProxy.loopback(port: upstreamPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard upstream >= 0, connected == 0 else {
                if upstream >= 0 { Glibc.close(upstream) }
                Glibc.close(client)
                return
            }
            peers[client] = upstream
            peers[upstream] = client
        }

        /// Closes a socket and the one it forwards to.
        private func drop(_ fd: Int32) {
            if let peer = peers.removeValue(forKey: fd), peer >= 0 {
                peers.removeValue(forKey: peer)
                silenced.remove(peer)
                Glibc.close(peer)
            }
            silenced.remove(fd)
            Glibc.close(fd)
        }
    }
}
