import Foundation
internal import Glibc
import Synchronization

/// An absolute deadline for every request's headers and body, which libmicrohttpd does not have
/// (its timeout counts only silence, so a client trickling a byte every few seconds keeps a
/// connection forever).
///
/// Each connection is tracked from the moment it opens: its request line, headers and body must
/// all arrive within `limit` of the connection opening or of the previous response. A watchdog
/// thread checks every 100 ms; a request past its deadline gets `408 Request Timeout` written to
/// its socket and the socket shut down, which makes libmicrohttpd close the connection on its own
/// thread at once. Nothing is written once the access handler has started answering, and a socket
/// is touched only while its inode is the one recorded at open (a recycled descriptor is left alone).
final class RequestDeadlines: Sendable {
    enum Phase: Sendable {
        /// Connected, or answered and kept alive: waiting for (the rest of) a request line.
        case waiting
        /// The request line has arrived: headers and body are on their way.
        case receiving
        /// The access handler is answering: the deadline no longer applies.
        case answering
        /// The watchdog cut it off.
        case timedOut
    }

    struct Entry: Sendable {
        var inode: UInt64
        var phase: Phase
        var since: ContinuousClock.Instant
    }

    /// One lock's share of the table: connections are spread over the shards by descriptor, so
    /// worker threads answering different connections seldom wait for one another (a single lock
    /// taken three times per request by every worker was a measured bottleneck).
    private final class Shard: Sendable {
        let entries = Mutex<[Int32: Entry]>([:])
    }

    let limit: Duration
    private let shards = (0..<64).map { _ in Shard() }
    private let running = Atomic<Bool>(true)
    /// Requests cut off so far (for tests and metrics).
    let timedOut = Atomic<Int>(0)

    init(limit: Duration) {
        self.limit = limit
    }

    /// Starts the watchdog thread; it ends after `stop()`.
    func start() {
        guard limit > .zero else { return }
        let thread = Thread { [self] in
            while running.load(ordering: .relaxed) {
                usleep(100_000)
                sweep(now: .now)
            }
        }
        thread.start()
    }

    func stop() { running.store(false, ordering: .relaxed) }

    func opened(_ fd: Int32) {
        guard fd >= 0 else { return }
        let entry = Entry(inode: Self.inode(fd), phase: .waiting, since: .now)
        shard(fd).entries.withLock { $0[fd] = entry }
    }

    func closed(_ fd: Int32) {
        guard fd >= 0 else { return }
        _ = shard(fd).entries.withLock { $0.removeValue(forKey: fd) }
    }

    private func shard(_ fd: Int32) -> Shard { shards[Int(fd) % shards.count] }

    /// The request line arrived: its headers and body have `limit` from now. (A request line
    /// trickled in had `limit` too, counted from the connection opening or the previous response.)
    func requestStarted(_ fd: Int32) {
        update(fd) { entry in
            if entry.phase == .waiting {
                entry.phase = .receiving
                entry.since = .now
            }
        }
    }

    /// The handler is about to answer; false when the watchdog already cut the request off.
    func beginAnswer(_ fd: Int32) -> Bool {
        var allowed = true
        update(fd) { entry in
            if entry.phase == .timedOut {
                allowed = false
            } else {
                entry.phase = .answering
            }
        }
        return allowed
    }

    /// The response is done: a kept-alive connection waits for its next request afresh.
    func requestCompleted(_ fd: Int32) {
        update(fd) { entry in
            if entry.phase != .timedOut {
                entry.phase = .waiting
                entry.since = .now
            }
        }
    }

    private func update(_ fd: Int32, _ body: (inout Entry) -> Void) {
        guard fd >= 0 else { return }
        shard(fd).entries.withLock { table in
            guard var entry = table[fd] else { return }
            body(&entry)
            table[fd] = entry
        }
    }

    /// Cuts off every request past its deadline.
    func sweep(now: ContinuousClock.Instant) {
        for shard in shards {
            shard.entries.withLock { table in
                for (fd, entry) in table where entry.phase == .waiting || entry.phase == .receiving {
                    guard now - entry.since > limit, Self.inode(fd) == entry.inode else { continue }
                    if entry.phase == .receiving {
                        // Best effort and never blocking: the client may not even be reading.
                        let answer = Array("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".utf8)
                        SocketCalls.sendWithoutBlocking(fd, answer)
                    }
                    SocketCalls.shutdownBoth(fd)
                    table[fd]?.phase = .timedOut
                    timedOut.add(1, ordering: .relaxed)
                }
            }
        }
    }

    private static func inode(_ fd: Int32) -> UInt64 {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return 0 }
        return UInt64(info.st_ino)
    }
}
