import AttestService
import Testing

@Suite("Names an admin gives")
struct AdminNameTests {
    @Test(
        "refused: empty, too many characters or bytes, C0 and C1 controls, DEL, bidirectional formatting, line separators",
        arguments: [
            "", String(repeating: "a", count: 101), String(repeating: "e\u{301}\u{302}\u{303}\u{304}", count: 100), "tab\there",
            "new\nline", "nul\u{0}", "del\u{7F}", "next line\u{85}", "csi\u{9B}", "\u{202E}gnp.exe", "a\u{2066}b\u{2069}",
            "mark\u{200F}", "arabic mark\u{61C}", "line\u{2028}separator",
        ])
    func refused(name: String) {
        #expect(AdminName.problem(name, maximumCharacters: 100) != nil)
    }

    @Test(
        "accepted: letters of any script, emoji, spaces and punctuation, up to the limits",
        arguments: [
            "CI", "Alice's Simulator", "Ünïcödé app", "アプリ", "تطبيق", "🚀 launch", String(repeating: "a", count: 100),
            String(repeating: "é", count: 100),
        ])
    func accepted(name: String) {
        #expect(AdminName.problem(name, maximumCharacters: 100) == nil)
    }

    @Test("the problem names the refused character")
    func namesTheCharacter() {
        #expect(AdminName.problem("\u{202E}x", maximumCharacters: 100)?.contains("U+202E") == true)
        #expect(AdminName.problem("x\u{85}", maximumCharacters: 100)?.contains("U+0085") == true)
    }
}
