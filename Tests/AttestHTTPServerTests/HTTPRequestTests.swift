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

    @Test(
        "trims only spaces and tabs, byte by byte, keeping a multi-byte character at either end whole",
        arguments: [
            (" \tapplication/json \t", "application/json"), ("chunked", "chunked"), ("   ", ""), ("", ""),
            (" é ", "é"), ("\u{A0}json\u{A0}", "\u{A0}json\u{A0}"), (" a b ", "a b"), ("\n x \n", "\n x \n"),
        ] as [(String, String)])
    func trimming(value: String, trimmed: String) {
        #expect(String(value.trimmingASCIISpaces()) == trimmed)
        #expect(String(value[...].trimmingASCIISpaces()) == trimmed)
    }

    @Test(
        "compares ASCII case-insensitively, and nothing else: no Unicode folding, no prefix",
        arguments: [
            ("Application/JSON", "application/json", true), ("CHUNKED", "chunked", true), ("chunked", "CHUNKED", true),
            ("application/jsonx", "application/json", false), ("application/jso", "application/json", false),
            ("chun\u{212A}ed", "chunked", false), ("application/json", "application/json", true), ("", "", true),
        ] as [(String, String, Bool)])
    func caseInsensitiveEquality(lhs: String, rhs: String, equal: Bool) {
        #expect(lhs[...].equalsIgnoringASCIICase(rhs) == equal)
    }
}
