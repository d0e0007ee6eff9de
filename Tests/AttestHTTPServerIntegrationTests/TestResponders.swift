import Glibc
import Synchronization

@testable import AttestHTTPServer

/// Records every request and answers with a fixed response, optionally after a delay.
final class RecordingResponder: HTTPResponder {
    let recorded = Mutex<[HTTPRequest]>([])
    let response: HTTPResponse
    let delayMicroseconds: UInt32

    init(response: HTTPResponse = HTTPResponse(status: 200, body: Array("ok".utf8)), delayMicroseconds: UInt32 = 0) {
        self.response = response
        self.delayMicroseconds = delayMicroseconds
    }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        recorded.withLock { $0.append(request) }
        if delayMicroseconds > 0 { usleep(delayMicroseconds) }  // real time: a responder as slow as the test asks
        return response
    }

    var requests: [HTTPRequest] { recorded.withLock { $0 } }
}

/// Starts a server on 127.0.0.1, port 0, two threads, with `adjust` applied to the configuration.
func startServer(
    _ responder: any HTTPResponder, adjust: (inout HTTPServer.Configuration) -> Void = { _ in }
) throws -> HTTPServer {
    var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0, threads: 2)
    adjust(&configuration)
    return try HTTPServer(configuration: configuration, responder: responder)
}
