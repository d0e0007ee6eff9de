import Foundation
import Glibc

/// A TCP listener on 127.0.0.1 that never accepts: the kernel completes connections into its
/// backlog, so a client's request is sent and never answered; and a port another process holds
/// (attestd cannot bind it).
package final class SilentListener: Sendable {
    package let port: UInt16
    private let socketDescriptor: Int32
    /// The listening socket (a `CannedServer` accepts on it).
    package var descriptor: Int32 { socketDescriptor }

    package init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            bind(descriptor, UnsafeRawPointer($0).assumingMemoryBound(to: sockaddr.self), length)
        }
        guard descriptor >= 0, bound == 0, listen(descriptor, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            getsockname(descriptor, UnsafeMutableRawPointer($0).assumingMemoryBound(to: sockaddr.self), &length)
        }
        socketDescriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(socketDescriptor) }
}
