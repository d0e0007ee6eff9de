internal import Glibc

extension HTTPServer {
    /// Where and how the server listens; validated when the server starts.
    package struct Configuration: Sendable {
        /// The address to bind: an IPv4 or IPv6 literal (`127.0.0.1`, `0.0.0.0`, `::1`), never a name,
        /// so that starting never depends on DNS.
        package var host: String
        /// The port to bind; 0 asks the kernel for a free one (read it back from `HTTPServer.port`).
        package var port: UInt16
        /// Worker threads in libmicrohttpd's pool, each running its own epoll loop; at least 1.
        package var threads: Int
        /// The largest request body accepted; larger ones get 413 and the responder is not called.
        package var maximumBodyBytes: Int
        /// Seconds a connection may stay idle (no bytes received) before it is closed; defends against
        /// slowloris headers and slow bodies. 0 disables the timeout.
        package var connectionTimeoutSeconds: UInt32
        /// Connections open at once, across all threads; further clients are accepted and closed.
        package var connectionLimit: UInt32
        /// Connections open at once from one IP address; 0 means no per-address limit. The first
        /// request on a connection over it gets `overCapResponse` and the connection is closed;
        /// connections past twice it are closed at accept without an answer.
        package var perAddressConnectionLimit: UInt32
        /// Seconds a request's headers and body may take in all, however steadily they trickle in
        /// (answered 408 and closed past it); also bounds a request line trickled into an open
        /// connection. 0 disables the deadline.
        package var requestDeadlineSeconds: UInt32
        /// Addresses `perAddressConnectionLimit` does not cap (called on an MHD thread; keep it
        /// quick): trusted proxies, which carry many clients' connections (their clients are
        /// limited by address after the proxy's forwarded header). Nil: none.
        package var uncappedAddress: (@Sendable (String) -> Bool)?
        /// Called (on an MHD thread; keep it quick) with the address of each connection refused by
        /// `perAddressConnectionLimit`.
        package var onRefusal: (@Sendable (String) -> Void)?
        /// The answer to a request on a connection over `perAddressConnectionLimit` (sent with
        /// `Connection: close`); by default 503 with `Retry-After: 1` and no body.
        package var overCapResponse = HTTPResponse(status: 503, headers: [HTTPHeader(name: "Retry-After", value: "1")], body: [])

        /// Makes a configuration; the defaults suit a service behind a local reverse proxy.
        package init(
            host: String = "127.0.0.1",
            port: UInt16 = 8080,
            threads: Int = HTTPServer.Configuration.activeCoreCount,
            maximumBodyBytes: Int = 65_536,
            connectionTimeoutSeconds: UInt32 = 10,
            connectionLimit: UInt32 = 4096,
            perAddressConnectionLimit: UInt32 = 0,
            requestDeadlineSeconds: UInt32 = 10
        ) {
            self.host = host
            self.port = port
            self.threads = threads
            self.maximumBodyBytes = maximumBodyBytes
            self.connectionTimeoutSeconds = connectionTimeoutSeconds
            self.connectionLimit = connectionLimit
            self.perAddressConnectionLimit = perAddressConnectionLimit
            self.requestDeadlineSeconds = requestDeadlineSeconds
            self.onRefusal = nil
            self.uncappedAddress = nil
        }

        /// The number of online processors (at least 1), the default thread count.
        package static var activeCoreCount: Int {
            max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        }

        /// Checks ranges libmicrohttpd would otherwise reject with no reason, and parses the host.
        func validated() throws(HTTPServerError) -> SocketAddress {
            guard threads >= 1, threads <= 1024 else {
                throw .invalidConfiguration("threads must be between 1 and 1024, got \(threads)")
            }
            guard maximumBodyBytes >= 0 else {
                throw .invalidConfiguration("maximumBodyBytes must not be negative, got \(maximumBodyBytes)")
            }
            // MHD splits the connection limit evenly over the pool: each worker needs at least one.
            guard connectionLimit >= threads else {
                throw .invalidConfiguration("connectionLimit (\(connectionLimit)) must be at least threads (\(threads))")
            }
            guard let address = SocketAddress(host: host, port: port) else {
                throw .invalidConfiguration("host must be an IPv4 or IPv6 address literal, got \"\(host)\"")
            }
            return address
        }
    }
}
