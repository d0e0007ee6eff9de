import AttestTesting
import Glibc
import Testing

@testable import AttestHTTPServer

@Suite("HTTPServer: requests and responses over a real socket")
struct HTTPServerRequestTests {
    @Test("answers a GET with the responder's status, headers and body")
    func answersGET() throws {
        let responder = RecordingResponder(
            response: HTTPResponse(status: 201, headers: [HTTPHeader(name: "X-Answer", value: "42")], body: Array("created".utf8)))
        let server = try startServer(responder)
        let client = try RawHTTPClient(port: server.port)
        try client.sendGET()
        let response = try client.receiveResponse()
        #expect(response.status == 201)
        #expect(response.header("X-Answer") == "42")
        #expect(response.header("Content-Length") == "7")
        #expect(response.body == Array("created".utf8))
    }

    @Test("hands the responder the method, raw path and query, headers in order, body and peer address")
    func passesRequestFields() throws {
        let responder = RecordingResponder()
        let server = try startServer(responder)
        let client = try RawHTTPClient(port: server.port)
        try client.send(
            "PATCH /a%2Fb/c?x=1&y=%20?z HTTP/1.1\r\nHost: test\r\nX-Dup: one\r\nx-dup: two\r\n"
                + "Content-Length: 5\r\n\r\nhello")
        #expect(try client.receiveResponse().status == 200)
        let request = try #require(responder.requests.first)
        #expect(request.method == "PATCH")
        #expect(request.path == "/a%2Fb/c")
        #expect(request.query == "x=1&y=%20?z")
        #expect(request.headers.map(\.name) == ["Host", "X-Dup", "x-dup", "Content-Length"])
        #expect(request.headerValues("X-DUP") == ["one", "two"])
        #expect(request.header("content-length") == "5")
        #expect(request.body == Array("hello".utf8))
        #expect(request.remoteAddress == "127.0.0.1")
    }

    @Test("keeps the connection alive for a second request")
    func keepAlive() throws {
        let responder = RecordingResponder()
        let server = try startServer(responder)
        let client = try RawHTTPClient(port: server.port)
        try client.sendGET("/first")
        let first = try client.receiveResponse()
        try client.sendGET("/second")
        let second = try client.receiveResponse()
        #expect(first.status == 200 && second.status == 200)
        #expect(first.header("Connection")?.lowercased() != "close")
        #expect(responder.requests.map(\.path) == ["/first", "/second"])
    }

    @Test("assembles a body that arrives in several pieces")
    func bodyInPieces() throws {
        let responder = RecordingResponder()
        let server = try startServer(responder)
        let client = try RawHTTPClient(port: server.port)
        let body = (0..<3000).map { UInt8($0 % 251) }
        try client.send("POST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: 3000\r\n\r\n")
        for piece in stride(from: 0, to: body.count, by: 1000) {
            usleep(30_000)  // real time: a body that arrives in pieces, apart, as from a slow client
            try client.send(Array(body[piece..<(piece + 1000)]))
        }
        #expect(try client.receiveResponse().status == 200)
        #expect(responder.requests.first?.body == body)
    }

    @Test("sends 100 Continue to a client that expects it, then reads the body")
    func expectContinue() throws {
        let responder = RecordingResponder()
        let server = try startServer(responder)
        let client = try RawHTTPClient(port: server.port)
        try client.send("PUT / HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
        #expect(try client.receiveResponse().status == 100)
        try client.send("data")
        #expect(try client.receiveResponse().status == 200)
        #expect(responder.requests.first?.body == Array("data".utf8))
    }

    @Test("accepts a chunked body within the limit")
    func chunkedBody() throws {
        let responder = RecordingResponder()
        let server = try startServer(responder) { $0.maximumBodyBytes = 16 }
        let client = try RawHTTPClient(port: server.port)
        try client.send("POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\nabcdefgh\r\n0\r\n\r\n")
        #expect(try client.receiveResponse().status == 200)
        #expect(responder.requests.first?.body == Array("12345678abcdefgh".utf8))
    }

    @Test("answers 413 and closes, without reading the body, when Content-Length exceeds the limit")
    func contentLengthTooLarge() throws {
        let responder = RecordingResponder()
        let server = try startServer(responder) { $0.maximumBodyBytes = 1024 }
        let client = try RawHTTPClient(port: server.port)
        try client.send("POST / HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 1025\r\n\r\n")
        let response = try client.receiveResponse()
        #expect(response.status == 413)
        #expect(response.header("Connection")?.lowercased() == "close")
        #expect(client.isClosedByServer())
        #expect(responder.requests.isEmpty)
    }

    @Test("answers 413 and closes, without buffering, when a chunked body grows past the limit")
    func chunkedBodyTooLarge() throws {
        let responder = RecordingResponder()
        let server = try startServer(responder) { $0.maximumBodyBytes = 1024 }
        let client = try RawHTTPClient(port: server.port)
        let chunk = "258\r\n" + String(repeating: "x", count: 600) + "\r\n"
        try client.send("POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk + "0\r\n\r\n")
        let response = try client.receiveResponse()
        #expect(response.status == 413)
        #expect(response.header("Connection")?.lowercased() == "close")
        #expect(client.isClosedByServer())
        #expect(responder.requests.isEmpty)
    }

    @Test("closes the connection unanswered when a chunked body keeps growing far past the limit")
    func chunkedBodyFarTooLarge() throws {
        let responder = RecordingResponder()
        let server = try startServer(responder) { $0.maximumBodyBytes = 1024 }
        let client = try RawHTTPClient(port: server.port)
        try client.send("POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n")
        let chunk = Array(("1000\r\n" + String(repeating: "x", count: 4096) + "\r\n").utf8)
        var sendFailed = false
        for _ in 0..<64 {
            do { try client.send(chunk) } catch {
                sendFailed = true
                break
            }
        }
        #expect(sendFailed || client.isClosedByServer())
        #expect(eventually { server.activeRequestCount == 0 })
        #expect(responder.requests.isEmpty)
    }

    @Test("closes the connection when the responder answers with Connection: close")
    func responderCloses() throws {
        let responder = RecordingResponder(response: HTTPResponse(status: 200, headers: [HTTPHeader(name: "Connection", value: "close")]))
        let server = try startServer(responder)
        let client = try RawHTTPClient(port: server.port)
        try client.sendGET()
        #expect(try client.receiveResponse().status == 200)
        #expect(client.isClosedByServer())
    }

    @Test("answers 500 when the responder sets a header libmicrohttpd refuses")
    func refusedHeader() throws {
        let responder = RecordingResponder(
            response: HTTPResponse(status: 200, headers: [HTTPHeader(name: "X-Split", value: "a\r\nInjected: 1")]))
        let server = try startServer(responder)
        let client = try RawHTTPClient(port: server.port)
        try client.sendGET()
        let response = try client.receiveResponse()
        #expect(response.status == 500)
        #expect(response.header("Injected") == nil)
    }

    @Test("releases the request's state when the client disconnects mid-body")
    func disconnectMidBody() throws {
        let responder = RecordingResponder()
        let server = try startServer(responder)
        do {
            let client = try RawHTTPClient(port: server.port)
            try client.send("POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "x", count: 10))
            #expect(eventually { server.activeRequestCount == 1 })
        }
        #expect(eventually { server.activeRequestCount == 0 })
        #expect(responder.requests.isEmpty)
    }
}
