import Dispatch
import Foundation
import Synchronization

/// Writes lines to a file descriptor, holding the access log's lines briefly so that a busy server
/// writes them in blocks, as nginx's `access_log ... buffer=64k flush=1s` and Envoy's access logs
/// do (one `write` per request was a large part of the log line's cost, docs/BENCHMARKS.md).
///
/// - A batched line (a request's line) waits in its thread's block until the block holds
///   `capacity` bytes or the next tick of the flusher, every `interval`.
/// - Any other line (start, stop, warnings, errors) is written at once, together with what its
///   thread's block held before it, so that each thread's lines stay in order.
/// - `flush()` writes every block: call it before the process exits. A crash loses at most
///   `interval` of request lines.
///
/// Blocks are kept per thread (`ThreadOrdinal`), so workers logging at once do not queue on one
/// lock: with blocks picked by a hash of the thread's ID, two of eight workers often shared one,
/// and waiting for its lock cost as much as the `write`s saved. A block is written while its lock
/// is held (so a line added meanwhile cannot overtake it), and under one output lock for the
/// whole sink (so two blocks never interleave: a write of more than 4 KiB to a pipe or to
/// journald's socket is not atomic). Lock order: a block's, then the output's.
package final class BlockBufferedSink: LogSink {
    private final class Block: Sendable {
        let bytes: Mutex<[UInt8]>
        init() { bytes = Mutex([]) }
    }

    private let descriptor: Int32
    /// Held while bytes go to `descriptor`, so that blocks never interleave.
    private let output = Mutex(())
    private let capacity: Int
    private let blocks: [Block]
    // nonisolated(unsafe): set once in init; a DispatchSource is thread-safe, and only deinit
    // uses it after.
    private nonisolated(unsafe) let ticks: any DispatchSourceTimer

    /// A sink writing to `descriptor` (standard error by default) in blocks of up to `capacity`
    /// bytes per thread, each block written at the latest `interval` after its first line.
    package init(descriptor: Int32 = 2, capacity: Int = 64 * 1024, interval: Duration = .seconds(1)) {
        self.descriptor = descriptor
        self.capacity = max(1, capacity)
        blocks = (0..<32).map { _ in Block() }
        ticks = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "attestd.log-flush"))
        let (seconds, attoseconds) = interval.components
        let nanoseconds = max(1_000_000, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        ticks.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds))
        ticks.setEventHandler { [weak self] in self?.flush() }
        ticks.resume()
    }

    deinit {
        ticks.cancel()
        flush()
    }

    /// Writes what the calling thread's block held, then `line`, at once.
    package func write(_ line: String) {
        threadBlock.bytes.withLock { block in
            Self.append(line, to: &block)
            writeOut(&block)
        }
    }

    /// Adds `line` to the calling thread's block; writes the block when it is full.
    package func writeBatched(_ line: String) {
        threadBlock.bytes.withLock { block in
            Self.append(line, to: &block)
            if block.count >= capacity { writeOut(&block) }
        }
    }

    /// Writes every thread's block. When it returns, every line given before it was called is
    /// written (a block the flusher is writing meanwhile holds its lock until it is out).
    package func flush() {
        for block in blocks {
            block.bytes.withLock { bytes in
                if !bytes.isEmpty { writeOut(&bytes) }
            }
        }
    }

    /// Writes `block` and empties it, keeping its capacity; called with the block's lock held.
    private func writeOut(_ block: inout [UInt8]) {
        output.withLock { _ in FileDescriptorOutput.writeAll(block, to: descriptor) }
        block.removeAll(keepingCapacity: true)
    }

    /// The calling thread's block: its own while fewer than 32 threads have logged.
    private var threadBlock: Block { blocks[ThreadOrdinal.current % blocks.count] }

    private static func append(_ line: String, to block: inout [UInt8]) {
        var line = line
        line.withUTF8 { block.append(contentsOf: $0) }
        block.append(0x0A)
    }
}

/// A small number for each thread, given at its first call in the order threads ask (0, 1, 2,
/// ...), kept in a thread-specific value: it spreads per-thread state over shards without the
/// collisions of hashing thread IDs.
enum ThreadOrdinal {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
    private static let next = Atomic<Int>(1)

    /// The calling thread's number, from 0.
    static var current: Int {
        if let stored = pthread_getspecific(key) { return Int(bitPattern: stored) - 1 }
        let ordinal = next.wrappingAdd(1, ordering: .relaxed).oldValue
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: ordinal))
        return ordinal - 1
    }
}

/// `write(2)` until every byte is out: a short write is continued, an interrupted one retried; any
/// other failure drops the rest (a log line is never worth stopping for).
enum FileDescriptorOutput {
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count, let base = bytes.baseAddress {
            let written = Glibc.write(descriptor, base + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0, errno == EINTR {
                continue
            } else {
                return
            }
        }
    }

    static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        bytes.withUnsafeBytes { writeAll($0, to: descriptor) }
    }
}
