import Testing

@testable import AttestHTTP

@Suite("application/x-www-form-urlencoded bodies")
struct FormBodyTests {
    @Test(
        "well-formed bodies give their pairs",
        arguments: [
            ("token=abc.DEF_123-x", ["token": "abc.DEF_123-x"]),
            ("token=a&token_type_hint=access_token", ["token": "a", "token_type_hint": "access_token"]),
            ("a=b+c%20d%2B", ["a": "b c d+"]),
            ("a%3Db=%26", ["a=b": "&"]),
            ("a==b", ["a": "=b"]),
            ("a=&=b", ["a": "", "": "b"]),
            ("caf%C3%A9=%E2%82%AC", ["café": "€"]),
            ("", [:]),
        ] as [(String, [String: String])])
    func wellFormed(body: String, pairs: [String: String]) {
        #expect(FormBody.parse(Array(body.utf8)) == pairs)
    }

    @Test(
        "malformed bodies and names given twice are refused",
        arguments: ["token", "a=1&", "&a=1", "a=1&&b=2", "a=%4", "a=%zz", "a=%", "token=a&token=b", "a=%FF", "a%2=b"])
    func malformed(body: String) {
        #expect(FormBody.parse(Array(body.utf8)) == nil)
    }

    @Test("bytes that are not UTF-8 are refused, escaped or not")
    func notUTF8() {
        #expect(FormBody.parse(Array("a=".utf8) + [0xC3, 0x28]) == nil)
        #expect(FormBody.parse([0xFF] + Array("=b".utf8)) == nil)
    }
}
