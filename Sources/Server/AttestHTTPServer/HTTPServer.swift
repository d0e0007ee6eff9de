internal import CMicroHTTPD
internal import Glibc
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd's thread pool; it owns the `MHD_Daemon` and stops it on deinit.
///
/// Each of `Configuration.threads` workers runs its own epoll loop and calls the responder
/// synchronously, so the responder is called concurrently and should not block for long.
package final class HTTPServer: Sendable {
    /// The port the listen socket is bound to, also when the configuration asked for port 0.
    package let port: UInt16
    let context: ServerContext
    /// The running daemon, nil once stopped; the lock also makes a concurrent `stop()` wait for the first.
    private let daemon: Mutex<OpaquePointer?>
    /// How long `stop()` waits for in-flight requests before closing them anyway.
    private let drainLimit: Duration
    /// The connection limit in force: the configured one, or less when the process may not open
    /// that many descriptors (see `FileDescriptorBudget`).
    package let connectionLimit: UInt32

    /// Binds, starts the worker threads and begins answering with `responder`.
    package init(configuration: Configuration, responder: any HTTPResponder) throws(HTTPServerError) {
        let address = try configuration.validated()
        guard MHD_is_feature_supported(.FEATURE_EPOLL) == .YES else {
            throw .startFailed("this libmicrohttpd was built without epoll support")
        }
        if address.isIPv6 && MHD_is_feature_supported(.feature_IPv6) != .YES {
            throw .startFailed("this libmicrohttpd was built without IPv6 support")
        }
        let context = ServerContext(
            responder: responder, maximumBodyBytes: configuration.maximumBodyBytes,
            requestDeadline: .seconds(Int(configuration.requestDeadlineSeconds)),
            addresses: ConnectionsPerAddress(
                limit: Int(configuration.perAddressConnectionLimit), uncapped: configuration.uncappedAddress,
                onRefusal: configuration.onRefusal),
            overCapResponse: configuration.overCapResponse)
        // MHD_USE_ITC: MHD_quiesce_daemon needs it with internal polling threads.
        // MHD_ALLOW_SUSPEND_RESUME: connections parked for a deferred answer (`DeferredResponse`).
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_USE_ITC.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue
        if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        let contextPointer = Unmanaged.passUnretained(context).toOpaque()
        let connectionLimit = FileDescriptorBudget.connections(wanted: configuration.connectionLimit)

        let (started, startErrno): (OpaquePointer?, Int32) = address.withSockaddrPointer { socketAddress in
            var options = [
                MHD_OptionItem(option: .SOCK_ADDR, value: 0, ptr_value: socketAddress),
                MHD_OptionItem(option: .THREAD_POOL_SIZE, value: configuration.threads, ptr_value: nil),
                MHD_OptionItem(option: .CONNECTION_LIMIT, value: Int(connectionLimit), ptr_value: nil),
                MHD_OptionItem(
                    option: .CONNECTION_TIMEOUT, value: Int(configuration.connectionTimeoutSeconds), ptr_value: nil),
                MHD_OptionItem(option: .END, value: 0, ptr_value: nil),
            ]
            errno = 0
            let started = options.withUnsafeMutableBufferPointer { options in
                CMicroHTTPD_start_daemon(
                    flags, configuration.port, acceptPolicyCallback, contextPointer, accessHandler, contextPointer,
                    requestCompletedCallback, contextPointer,
                    uriLogCallback, contextPointer, connectionNotifyCallback, contextPointer, options.baseAddress)
            }
            return (started, errno)
        }
        guard let started else {
            let detail = String(cString: strerror(startErrno))
            switch startErrno {
            case EADDRINUSE, EADDRNOTAVAIL, EACCES:
                throw .bindFailed("cannot listen on \(configuration.host) port \(configuration.port): \(detail)")
            default:
                throw .startFailed("MHD_start_daemon failed for \(configuration.host) port \(configuration.port): \(detail)")
            }
        }
        let boundPort = CMicroHTTPD_daemon_bind_port(started)
        guard boundPort != 0 else {
            MHD_stop_daemon(started)
            throw .startFailed("MHD_DAEMON_INFO_BIND_PORT returned no port")
        }
        self.port = boundPort
        self.connectionLimit = connectionLimit
        self.context = context
        context.deadlines.start()
        self.daemon = Mutex(started)
        let timeout = configuration.connectionTimeoutSeconds
        self.drainLimit = .seconds(timeout == 0 ? 10 : Int(timeout))
    }

    deinit { stop() }

    /// Connections refused because their address held its whole per-address share (answered with
    /// `Configuration.overCapResponse`, or closed at accept past twice the share).
    package var refusedConnectionCount: Int { context.addresses.refused.load(ordering: .relaxed) }

    /// Connections parked now, waiting for a deferred answer.
    package var parkedConnectionCount: Int { context.parked.count }

    /// Requests begun and not yet finished (response sent, or abandoned); for tests and `stop()`.
    var activeRequestCount: Int { context.activeRequests.load(ordering: .sequentiallyConsistent) }

    /// Stops accepting connections, lets in-flight requests finish (for at most the connection timeout,
    /// or 10 s when it is 0), then stops the worker threads and closes every connection. From the
    /// start of the stop, a request whose answer is deferred and has not come when its worker would
    /// park it gets 503 with `Retry-After` at once, unless it was registered before its work
    /// started (`DeferredResponse.reserve`, a durable write): that one parks and gets its own
    /// answer within the wait. The ones still parked when the wait ends are answered 503;
    /// libmicrohttpd is stopped only with none parked.
    ///
    /// Idempotent and thread-safe: a second caller waits for the first to finish, then returns.
    package func stop() {
        daemon.withLock { daemon in
            guard let handle = daemon else { return }
            daemon = nil
            // From here on a request that would wait for a deferred answer gets 503 at once (one
            // registered before, `reserve`, still parks), so the parked connections can only become
            // fewer (libmicrohttpd aborts when stopped with one). Closed before `isStopping` is
            // set: whoever sees the server stopping finds the set closed.
            context.parked.close()
            context.isStopping.store(true, ordering: .sequentiallyConsistent)
            let listenSocket = MHD_quiesce_daemon(handle)
            if listenSocket != MHD_INVALID_SOCKET {
                // MHD says not to close the socket until MHD_stop_daemon (a worker may still hold the
                // descriptor), but shutting it down now makes new clients get a refusal instead of
                // waiting in the backlog. A failure leaves them waiting until close(); nothing to undo.
                SocketCalls.shutdownBoth(listenSocket)
            }
            let deadline = ContinuousClock.now + drainLimit
            while context.activeRequests.load(ordering: .sequentiallyConsistent) > 0 && ContinuousClock.now < deadline {
                usleep(2_000)
            }
            // libmicrohttpd aborts the process when stopped with a connection suspended: answer the
            // ones whose deferred answer has not come (503, the request may be retried elsewhere),
            // and give their workers a moment to send it. None can park after this (closed above).
            context.parked.answerAll()
            let resumed = ContinuousClock.now + .seconds(1)
            while context.activeRequests.load(ordering: .sequentiallyConsistent) > 0 && ContinuousClock.now < resumed {
                usleep(2_000)
            }
            MHD_stop_daemon(handle)
            context.deadlines.stop()
            if listenSocket != MHD_INVALID_SOCKET {
                // The descriptor is ours now and nothing else uses it; a close error cannot be acted on.
                _ = close(listenSocket)
            }
        }
    }
}

/// Descriptors for the connection limit: each connection holds one, and the soft RLIMIT_NOFILE is
/// often 1024. The soft limit is raised towards the hard one so the configured connection limit
/// fits with room for the database, logs and the listen socket; when even the hard limit is too
/// low, the connection limit is lowered to what fits (libmicrohttpd would otherwise fail accepts).
enum FileDescriptorBudget {
    /// Descriptors kept for everything but connections.
    static let reserve: UInt32 = 256

    static func connections(wanted: UInt32) -> UInt32 {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return wanted }
        let needed = rlim_t(wanted) + rlim_t(reserve)
        if limit.rlim_cur < needed {
            var raised = limit
            raised.rlim_cur = min(needed, limit.rlim_max)
            if setrlimit(RLIMIT_NOFILE_VALUE, &raised) == 0 { limit = raised }
        }
        guard limit.rlim_cur < needed else { return wanted }
        return UInt32(max(1, Int64(limit.rlim_cur) - Int64(reserve)))
    }

    /// RLIMIT_NOFILE as the type getrlimit takes on Linux (an enum there, an int elsewhere).
    private static var RLIMIT_NOFILE_VALUE: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }
}
