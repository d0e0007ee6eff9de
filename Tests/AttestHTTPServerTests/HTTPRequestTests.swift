import Testing

@testable import AttestHTTPServer

@Suite("HTTPRequest: header lookup and target splitting, without a socket")
struct HTTPRequestTests {
    let request = HTTPRequest(
        method: "GET", target: "/v1/x?a=1",
        headers: [
            HTTPHeader(name: "Content-Type", value: "application/cbor"),
            HTTPHeader(name: "X-Token", value: "first"),
            HTTPHeader(name: "x-token", value: "second"),
        ],
        body: [], remoteAddress: "127.0.0.1")

    @Test("finds a header by name regardless of case, first match")
    func headerLookup() {
        #expect(request.header("content-type") == "application/cbor")
        #expect(request.header("X-TOKEN") == "first")
        #expect(request.header("Content-Typ") == nil)
    }

    @Test("lists every value of a repeated header, in order")
    func headerValues() {
        #expect(request.headerValues("x-token") == ["first", "second"])
        #expect(request.headerValues("Accept").isEmpty)
    }

    @Test(
        "splits the target at the first question mark",
        arguments: [
            ("/a", "/a", nil), ("/a?", "/a", ""), ("/a?b=1?c", "/a", "b=1?c"), ("*", "*", nil),
        ] as [(String, String, String?)])
    func targetSplit(target: String, path: String, query: String?) {
        let request = HTTPRequest(method: "GET", target: target, headers: [], body: [], remoteAddress: "::1")
        #expect(request.path == path)
        #expect(request.query == query)
    }
}
