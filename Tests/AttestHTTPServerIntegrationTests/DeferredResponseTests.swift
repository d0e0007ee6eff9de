import AttestTesting
import Dispatch
import Glibc
import Synchronization
import Testing

@testable import AttestHTTPServer

/// Answers `/later` requests only when released (from another thread), others at once.
final class DeferringResponder: HTTPResponder {
    let waiting = Mutex<[DeferredResponse]>([])

    func respond(to request: HTTPRequest) -> HTTPResponse { HTTPResponse(status: 200, body: Array("now".utf8)) }

    func respond(to request: HTTPRequest, answer: DeferredResponse) {
        guard request.path == "/later" else { return answer.complete { HTTPResponse(status: 200, body: Array("now".utf8)) } }
        waiting.withLock { $0.append(answer) }
    }

    var waitingCount: Int { waiting.withLock { $0.count } }

    /// Answers every parked request from another thread.
    func release() {
        let answers = waiting.withLock { answers in
            defer { answers = [] }
            return answers
        }
        DispatchQueue.global().async {
            for answer in answers { answer.complete { HTTPResponse(status: 200, body: Array("later".utf8)) } }
        }
    }
}

/// Answers every request from another thread at once: the answer races the worker's parking.
final class RacingResponder: HTTPResponder {
    func respond(to request: HTTPRequest) -> HTTPResponse { HTTPResponse(status: 500) }

    func respond(to request: HTTPRequest, answer: DeferredResponse) {
        let target = request.path
        DispatchQueue.global().async { answer.complete { HTTPResponse(status: 200, body: Array(target.utf8)) } }
    }
}

@Suite("HTTPServer: answers given later, from another thread")
struct DeferredResponseTests {
    @Test("while a request waits for its answer, its worker serves other connections; the answer then arrives")
    func workerIsFree() throws {
        let responder = DeferringResponder()
        let server = try startServer(responder) { $0.threads = 1 }
        let parked = try RawHTTPClient(port: server.port)
        try parked.sendGET("/later")
        #expect(eventually { responder.waitingCount == 1 })
        for _ in 0..<3 {
            let other = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 2)
            try other.sendGET("/now")
            #expect(try other.receiveResponse().body == Array("now".utf8))
        }
        #expect(eventually { server.parkedConnectionCount == 1 })
        responder.release()
        let response = try parked.receiveResponse()
        #expect(response.status == 200)
        #expect(eventually { server.parkedConnectionCount == 0 })
        #expect(response.body == Array("later".utf8))
        // The connection goes on after a deferred answer (keep-alive).
        try parked.sendGET("/now")
        #expect(try parked.receiveResponse().body == Array("now".utf8))
    }

    @Test("an answer that comes before the worker could park the connection, or just after, is sent once, to its request")
    func answerRacesParking() throws {
        let server = try startServer(RacingResponder()) { $0.threads = 2 }
        let clients = try (0..<4).map { _ in try RawHTTPClient(port: server.port) }
        for round in 0..<50 {
            for (index, client) in clients.enumerated() { try client.sendGET("/r\(round)c\(index)") }
            for (index, client) in clients.enumerated() {
                #expect(try client.receiveResponse().body == Array("/r\(round)c\(index)".utf8))
            }
        }
    }

    @Test("stopping with a request still waiting answers it 503 with Retry-After instead of aborting the process")
    func stopAnswersParked() throws {
        let responder = DeferringResponder()
        let server = try startServer(responder) { $0.connectionTimeoutSeconds = 1 }
        let parked = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
        try parked.sendGET("/later")
        #expect(eventually { responder.waitingCount == 1 })
        server.stop()
        let response = try parked.receiveResponse()
        #expect(response.status == 503)
        #expect(response.header("Retry-After") == "1")
        // The responder's own answer, now too late, is dropped.
        responder.release()
        #expect(server.context.parked.count == 0)
    }
}
