internal import Glibc

/// An IPv4 or IPv6 socket address built from a numeric host, for MHD_OPTION_SOCK_ADDR.
enum SocketAddress {
    case v4(sockaddr_in)
    case v6(sockaddr_in6)

    /// Parses an address literal; nil for anything else (names are not resolved).
    init?(host: String, port: UInt16) {
        var v4 = sockaddr_in()
        (v4.sin_family, v4.sin_port) = (sa_family_t(AF_INET), port.bigEndian)
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            self = .v4(v4)
            return
        }
        var v6 = sockaddr_in6()
        (v6.sin6_family, v6.sin6_port) = (sa_family_t(AF_INET6), port.bigEndian)
        if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            self = .v6(v6)
            return
        }
        return nil
    }

    /// Whether MHD must be told to open an IPv6 socket (MHD_USE_IPv6).
    var isIPv6: Bool {
        if case .v6 = self { return true }
        return false
    }

    /// Calls `body` with a `struct sockaddr *` that is valid only during the call.
    func withSockaddrPointer<R>(_ body: (UnsafeMutableRawPointer) -> R) -> R {
        switch self {
        case .v4(var address): withUnsafeMutablePointer(to: &address) { body(UnsafeMutableRawPointer($0)) }
        case .v6(var address): withUnsafeMutablePointer(to: &address) { body(UnsafeMutableRawPointer($0)) }
        }
    }

    /// The numeric text of the IP address in `address` (`127.0.0.1`, `::1`), or "" for another family.
    static func text(of address: UnsafePointer<sockaddr>) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let converted: UnsafePointer<CChar>?
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            var ip = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self).sin_addr
            converted = inet_ntop(AF_INET, &ip, &buffer, socklen_t(buffer.count))
        case AF_INET6:
            var ip = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self).sin6_addr
            converted = inet_ntop(AF_INET6, &ip, &buffer, socklen_t(buffer.count))
        default:
            converted = nil
        }
        guard converted != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
