import AttestTesting
import Dispatch
import Foundation
import Glibc
import Testing

@testable import AttestHTTPServer

/// Stopping while answers are deferred (decision 0003): libmicrohttpd aborts the process when it is
/// stopped with a connection suspended, so once `stop` has begun nothing parks any more.
@Suite("HTTPServer: stopping while answers are deferred")
struct StopWhileParkedTests {
    @Test("once stopping, a request that would wait for a deferred answer is answered 503 at once")
    func newDeferredRequestAnsweredAtOnce() throws {
        let responder = DeferringResponder()
        // A long drain (10 s), so that the idle connection below outlives it on a loaded machine.
        let server = try startServer(responder) { $0.connectionTimeoutSeconds = 10 }
        let parked = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 30)
        try parked.sendGET("/later")
        #expect(eventually { responder.waitingCount == 1 })
        let other = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 30)
        // Served once, so the server has accepted it: a connection still in the listen backlog
        // when the stop begins is reset.
        try other.sendGET("/now")
        #expect(try other.receiveResponse().status == 200)
        // stop() blocks for the drain: on a thread of its own, not one of Dispatch's few.
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            server.stop()
            stopped.signal()
        }.start()
        #expect(eventually { server.context.isStopping.load(ordering: .sequentiallyConsistent) })
        let sent = ContinuousClock.now
        try other.sendGET("/later")
        let response = try other.receiveResponse()
        #expect(response.status == 503)
        #expect(response.header("Retry-After") == "1")
        // Before the fix it parked until the drain gave up (10 s) and was answered 503 then.
        #expect(ContinuousClock.now - sent < .seconds(4), "the request waited for the drain")
        // The request parked before the stop still gets its own answer, and ends the drain.
        responder.release()
        #expect(try parked.receiveResponse().status == 200)
        stopped.wait()
    }

    @Test("a request completed after the parked ones were answered 503 is refused too, and the server stops without aborting")
    func requestAfterTheParkedWereAnswered() throws {
        let responder = DeferringResponder()
        let server = try startServer(responder) { $0.connectionTimeoutSeconds = 2 }
        let parked = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 10)
        try parked.sendGET("/later")
        #expect(eventually { responder.waitingCount == 1 })
        // A request begun before the stop, its headers trickling in, completed only once the stop
        // has answered the parked connection: before the fix it parked and MHD_stop_daemon aborted.
        let late = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 10)
        try late.sendGET("/now")
        #expect(try late.receiveResponse().status == 200)
        try late.send("GET /later HTTP/1.1\r\nHost: test\r\n")
        // stop() blocks for the drain: on a thread of its own, not one of Dispatch's few.
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            server.stop()
            stopped.signal()
        }.start()
        // The stop has answered the parked connection once none is left parked.
        let deadline = ContinuousClock.now + .seconds(10)
        while server.context.parked.count > 0 && ContinuousClock.now < deadline {
            try late.send("X-Keep-Alive: 1\r\n")
            usleep(100_000)  // real time: the stop's drain runs on libmicrohttpd's clock; the client keeps talking meanwhile
        }
        try late.send("\r\n")
        let response = try late.receiveResponse()
        #expect(response.status == 503)
        #expect(try parked.receiveResponse().status == 503)
        stopped.wait()
        #expect(server.context.parked.count == 0)
    }
}
