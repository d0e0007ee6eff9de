import AttestTesting
import Dispatch
import Foundation
import Glibc
import Testing

@testable import AttestHTTPServer

@Suite("HTTPServer: starting, stopping and load")
struct HTTPServerLifecycleTests {
    @Test("binds a free port when asked for port 0")
    func portZero() throws {
        let first = try startServer(RecordingResponder())
        let second = try startServer(RecordingResponder())
        #expect(first.port != 0 && second.port != 0)
        #expect(first.port != second.port)
    }

    @Test("listens on an IPv6 address and reports the peer as ::1")
    func ipv6() throws {
        let responder = RecordingResponder()
        let server = try startServer(responder) { $0.host = "::1" }
        let client = try RawHTTPClient(host: "::1", port: server.port)
        try client.sendGET()
        #expect(try client.receiveResponse().status == 200)
        #expect(responder.requests.first?.remoteAddress == "::1")
    }

    @Test("throws bindFailed when the port is already taken")
    func portTaken() throws {
        let running = try startServer(RecordingResponder())
        #expect(throws: HTTPServerError.bindFailed("")) {
            try startServer(RecordingResponder()) { $0.port = running.port }
        }
    }

    @Test(
        "throws invalidConfiguration for values libmicrohttpd cannot use",
        arguments: [
            HTTPServer.Configuration(host: "localhost", port: 0),
            HTTPServer.Configuration(host: "127.0.0.256", port: 0),
            HTTPServer.Configuration(host: "127.0.0.1", port: 0, threads: 0),
            HTTPServer.Configuration(host: "127.0.0.1", port: 0, maximumBodyBytes: -1),
            HTTPServer.Configuration(host: "127.0.0.1", port: 0, threads: 4, connectionLimit: 3),
        ])
    func invalidConfiguration(configuration: HTTPServer.Configuration) {
        #expect(throws: HTTPServerError.invalidConfiguration("")) {
            try HTTPServer(configuration: configuration, responder: RecordingResponder())
        }
    }

    @Test("lets an in-flight request finish when stopped from another thread")
    func stopDrains() throws {
        // Two seconds of work: long enough that stop(), started from another thread, is under way
        // before the answer is queued even on a loaded machine.
        let responder = RecordingResponder(delayMicroseconds: 2_000_000)
        let server = try startServer(responder)
        let client = try RawHTTPClient(port: server.port)
        try client.sendGET()
        #expect(eventually { responder.requests.count == 1 })
        let stopped = DispatchGroup()
        let stopStarted = ContinuousClock.now
        // A thread of its own: Dispatch's global queue may be busy with other tests' work.
        stopped.enter()
        Thread {
            server.stop()
            stopped.leave()
        }.start()
        let response = try client.receiveResponse()
        stopped.wait()
        let stopDuration = ContinuousClock.now - stopStarted
        #expect(response.status == 200)
        #expect(stopDuration > .milliseconds(500), "stop() returned before the request finished")
        #expect(response.header("Connection")?.lowercased() == "close")
        #expect(server.activeRequestCount == 0)
    }

    @Test("refuses new connections once stopped, and a second stop does nothing")
    func stopRefuses() throws {
        let server = try startServer(RecordingResponder())
        let port = server.port
        server.stop()
        server.stop()
        #expect(throws: RawHTTPClientError.self) {
            let client = try RawHTTPClient(port: port, receiveTimeoutSeconds: 1)
            try client.sendGET()
            _ = try client.receiveResponse()
        }
    }

    @Test("closes a connection that stays idle past the connection timeout", .timeLimit(.minutes(1)))
    func idleTimeout() throws {
        let server = try startServer(RecordingResponder()) { $0.connectionTimeoutSeconds = 1 }
        let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
        try client.send("GET / HTTP/1.1\r\nHost: te")
        let started = ContinuousClock.now
        #expect(client.isClosedByServer())
        #expect(ContinuousClock.now - started < .seconds(4))
        #expect(eventually { server.activeRequestCount == 0 })
    }

    @Test("answers a second connection from the same address beyond the per-address limit with 503 and closes it")
    func perAddressLimit() throws {
        let server = try startServer(RecordingResponder()) { $0.perAddressConnectionLimit = 1 }
        let first = try RawHTTPClient(port: server.port)
        try first.sendGET()
        #expect(try first.receiveResponse().status == 200)
        let second = try RawHTTPClient(port: server.port)
        try second.sendGET()
        let answer = try second.receiveResponse()
        #expect(answer.status == 503)
        #expect(answer.header("Retry-After") == "1")
        #expect(second.isClosedByServer())
    }

    @Test("answers 300 clients connected at the same time", .timeLimit(.minutes(1)))
    func threeHundredClients() throws {
        let responder = RecordingResponder()
        // Loose timeouts: this test is about 300 connections at once, not about deadlines, and a
        // loaded CI machine may take seconds to open them all (it once closed the first ones).
        let server = try startServer(responder) {
            $0.connectionTimeoutSeconds = 60
            $0.requestDeadlineSeconds = 60
        }
        let started = ContinuousClock.now
        // All connections are open before any request is sent, so the server holds 300 at once.
        let clients = try (0..<300).map { _ in try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 30) }
        for (index, client) in clients.enumerated() { try client.sendGET("/client/\(index)") }
        let statuses = try clients.map { try $0.receiveResponse().status }
        let elapsed = ContinuousClock.now - started
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(Set(responder.requests.map(\.path)).count == 300)
        #expect(elapsed < .seconds(30), "300 clients took \(elapsed)")
    }
}
