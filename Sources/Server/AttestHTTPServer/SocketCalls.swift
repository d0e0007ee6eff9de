internal import Glibc

/// The raw socket calls of the request watchdog and of the stop, in a file that does not import
/// Foundation: with the Swift runtime linked statically (the Debian package's build), a file
/// importing Foundation does not see Glibc's `SHUT_RDWR`.
enum SocketCalls {
    /// Shuts down both directions of `fd`: a blocked or pending peer sees the end at once. A
    /// failure (the peer already gone) leaves nothing to undo.
    static func shutdownBoth(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Writes `bytes` to `fd` once, never blocking and never raising SIGPIPE; best effort.
    static func sendWithoutBlocking(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }
}
