import AttestTesting
import Foundation
import Synchronization
import Testing

@testable import AttestObservability

@Suite("Log lines in blocks: request lines held per thread, every other line at once and in order")
struct BlockBufferedSinkTests {
    /// A temporary file the sink writes to, read back by path.
    final class LogFile {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sink-\(UUID().uuidString).log").path
        let descriptor: Int32

        init() { descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o600) }
        deinit {
            close(descriptor)
            unlink(path)
        }

        var lines: [String] {
            (try? String(contentsOfFile: path, encoding: .utf8)).map { $0.split(separator: "\n").map(String.init) } ?? []
        }
        var text: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    }

    @Test("a batched line is held until flush; then every line, each ending in a newline")
    func heldUntilFlush() {
        let file = LogFile()
        let sink = BlockBufferedSink(descriptor: file.descriptor, interval: .seconds(3600))
        sink.writeBatched(#"{"msg":"request","n":1}"#)
        sink.writeBatched(#"{"msg":"request","n":2}"#)
        #expect(file.text.isEmpty)
        sink.flush()
        #expect(file.text == "{\"msg\":\"request\",\"n\":1}\n{\"msg\":\"request\",\"n\":2}\n")
        sink.flush()
        #expect(file.lines.count == 2)
    }

    @Test("a line that is not batched is written at once, after the lines its thread held")
    func immediateAfterHeld() {
        let file = LogFile()
        let sink = BlockBufferedSink(descriptor: file.descriptor, interval: .seconds(3600))
        sink.writeBatched("held 1")
        sink.writeBatched("held 2")
        sink.write("at once")
        #expect(file.lines == ["held 1", "held 2", "at once"])
    }

    @Test("a block is written when it reaches its capacity")
    func fullBlockWritten() {
        let file = LogFile()
        let sink = BlockBufferedSink(descriptor: file.descriptor, capacity: 64, interval: .seconds(3600))
        sink.writeBatched(String(repeating: "a", count: 40))
        #expect(file.text.isEmpty)
        sink.writeBatched(String(repeating: "b", count: 40))
        #expect(file.lines == [String(repeating: "a", count: 40), String(repeating: "b", count: 40)])
    }

    @Test("the flusher writes held lines within its interval")
    func flushedOnTick() {
        let file = LogFile()
        let sink = BlockBufferedSink(descriptor: file.descriptor, interval: .milliseconds(50))
        sink.writeBatched("held")
        #expect(eventually { !file.lines.isEmpty })  // the sink's own tick
        #expect(file.lines == ["held"])
        withExtendedLifetime(sink) {}
    }

    @Test("held lines are written when the sink goes away")
    func flushedOnDeinit() {
        let file = LogFile()
        do {
            let sink = BlockBufferedSink(descriptor: file.descriptor, interval: .seconds(3600))
            sink.writeBatched("held")
        }
        #expect(file.lines == ["held"])
    }

    @Test("lines from many threads at once: each written exactly once, each thread's in order")
    func concurrentWriters() async {
        let file = LogFile()
        let sink = BlockBufferedSink(descriptor: file.descriptor, capacity: 512, interval: .milliseconds(5))
        let threads = 8
        let perThread = 2_000
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            Thread.detachNewThread {
                for number in 0..<perThread {
                    if number % 100 == 99 { sink.write("\(thread) \(number)") } else { sink.writeBatched("\(thread) \(number)") }
                }
                done.leave()
            }
        }
        done.wait()
        sink.flush()
        var next = [Int](repeating: 0, count: threads)
        var inOrder = true
        for line in file.lines {
            let parts = line.split(separator: " ").compactMap { Int($0) }
            guard parts.count == 2, parts[0] < threads else {
                inOrder = false
                continue
            }
            if parts[1] != next[parts[0]] { inOrder = false }
            next[parts[0]] = parts[1] + 1
        }
        #expect(inOrder)
        #expect(next == [Int](repeating: perThread, count: threads))
        #expect(file.lines.count == threads * perThread)
    }

    @Test("blocks larger than a pipe's atomic write, from many threads, to a slow reader: no line torn or interleaved")
    func noTornLinesOnAPipe() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let (reading, writing) = (ends[0], ends[1])
        let received = Mutex<[UInt8]>([])
        let readerDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 1_000)
            while true {
                let count = read(reading, &buffer, buffer.count)
                if count <= 0 { break }
                received.withLock { $0 += buffer[0..<count] }
                usleep(200)  // a reader that falls behind: the pipe fills and writes come back short
            }
            readerDone.signal()
        }
        let sink = BlockBufferedSink(descriptor: writing, capacity: 16 * 1024, interval: .milliseconds(2))
        let threads = 6
        let perThread = 600
        let line = String(repeating: "x", count: 100)
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            Thread.detachNewThread {
                for number in 0..<perThread { sink.writeBatched("\(thread) \(number) \(line)") }
                done.leave()
            }
        }
        done.wait()
        sink.flush()
        close(writing)
        readerDone.wait()
        close(reading)
        let lines = String(decoding: received.withLock { $0 }, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last == "")
        let whole = lines.dropLast().filter { text in
            let parts = text.split(separator: " ")
            return parts.count == 3 && Int(parts[0]) != nil && Int(parts[1]) != nil && parts[2] == line
        }
        #expect(whole.count == threads * perThread)
        #expect(lines.count - 1 == threads * perThread)
    }
}

@Suite("Logger: request lines may be batched, every other line is not")
struct LoggerBatchingTests {
    final class RecordingSink: LogSink {
        let written = Mutex<[(line: String, batched: Bool)]>([])
        func write(_ line: String) { written.withLock { $0.append((line, false)) } }
        func writeBatched(_ line: String) { written.withLock { $0.append((line, true)) } }
    }

    @Test("a line logged as batched goes to writeBatched, any other to write; both are whole JSON objects")
    func batchedGoesToWriteBatched() {
        let sink = RecordingSink()
        let logger = Logger(sink: sink)
        logger.log(.info, "request", fields: [("status", .int(200))], batched: true)
        logger.log(.info, "listening", fields: [])
        let written = sink.written.withLock { $0 }
        #expect(written.map(\.batched) == [true, false])
        #expect(written.allSatisfy { $0.line.hasPrefix("{") && $0.line.hasSuffix("}") })
        #expect(written[0].line.contains(#""status":200"#))
    }

    @Test("a sink that does not buffer writes batched lines at once")
    func defaultWritesAtOnce() {
        let lines = Mutex<[String]>([])
        let logger = Logger(sink: ClosureSink { line in lines.withLock { $0.append(line) } })
        logger.log(.info, "request", fields: [], batched: true)
        #expect(lines.withLock { $0.count } == 1)
    }
}

@Suite("ThreadOrdinal: one number per thread, kept")
struct ThreadOrdinalTests {
    @Test("a thread keeps its number; threads at once get different numbers")
    func distinctPerThread() {
        let mine = ThreadOrdinal.current
        #expect(ThreadOrdinal.current == mine)
        let seen = Mutex<[Int]>([])
        let started = DispatchGroup()
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<8 {
            started.enter()
            Thread.detachNewThread {
                let first = ThreadOrdinal.current
                seen.withLock { $0.append(first == ThreadOrdinal.current ? first : -1) }
                started.leave()
                release.wait()  // alive until all have asked, so no two are the same thread
            }
        }
        started.wait()
        for _ in 0..<8 { release.signal() }
        let numbers = seen.withLock { $0 } + [mine]
        #expect(!numbers.contains(-1))
        #expect(Set(numbers).count == 9)
    }
}
