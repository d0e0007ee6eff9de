import AttestTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AttestHTTP
@testable import AttestHTTPServer

/// A durable write's answer is its own even while the server stops: a 503 sent while the write
/// still commits would tell a device to retry an attestation whose key is already registered.
@Suite("HTTP: writes while the server stops")
struct StopDuringWriteTests {
    @Test(
        "a write begun before the stop gets its own answer within the drain; one that arrives after the stop began is refused before it starts"
    )
    func writesAndStop() throws {
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let returned = DispatchSemaphore(value: 0)
        let starts = Mutex(0)
        let held = AnswerDeadlineTests.HeldAnswers()
        let builder = RouterBuilder()
        builder.root.offload("GET", "/write", name: "write") { _ in
            let first = starts.withLock {
                $0 += 1
                return $0 == 1
            }
            if first {
                // The first write is running when the stop begins.
                entered.signal()
                proceed.wait()
                returned.signal()
            }
            held.waitUntilGiven()
            return HTTPResponse(status: 200)
        }
        builder.root.on("GET", "/now", name: "now") { _ throws(Problem) in HTTPResponse(status: 200) }
        // Idle connections outlive a slow moment of a loaded machine (60 s, which is also the drain).
        let server = try HTTPServer(
            configuration: HTTPServer.Configuration(
                host: "127.0.0.1", port: 0, threads: 2, connectionTimeoutSeconds: 60, requestDeadlineSeconds: 60),
            responder: builder.router(middleware: []))
        let writer = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 30)
        let other = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 30)
        // Served once, so the server has accepted it before the stop.
        try other.sendGET("/now")
        #expect(try other.receiveResponse().status == 200)
        try writer.sendGET("/write")
        #expect(entered.wait(timeout: .now() + .seconds(10)) == .success)
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            server.stop()
            stopped.signal()
        }.start()
        #expect(eventually(within: 5) { server.context.isStopping.load(ordering: .sequentiallyConsistent) })

        // The first write goes on, its connection parked.
        proceed.signal()
        #expect(returned.wait(timeout: .now() + .seconds(10)) == .success)

        // Arriving now: refused at once, and its work never starts.
        try other.sendGET("/write")
        let refused = try other.receiveResponse()
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") == "1")
        #expect(starts.withLock { $0 } == 1)

        // The parked write gets its own answer, within the drain.
        held.giveAll()
        #expect(try writer.receiveResponse().status == 200)
        #expect(stopped.wait(timeout: .now() + .seconds(65)) == .success)
    }
}
