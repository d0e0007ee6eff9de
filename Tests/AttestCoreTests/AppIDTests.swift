import AttestCore
import AttestCrypto
import Testing

@Suite("App IDs (team and bundle ID validation, E5/D10)")
struct AppIDTests {
    @Test(
        "accepts Apple's formats, including the recorded single-label and underscore bundle IDs",
        arguments: [
            "ABCDE12345.com.example.app", "VNP5A9S22V.76R387MAVZ", "0352187391.com.apple.example_app_attest",
            "6MURL8TA57.de.vincent-haupert.apple-appattest-poc",
        ])
    func accepts(_ text: String) throws {
        #expect(try AppID(text).description == text)
    }

    @Test(
        "refuses team IDs that are not exactly 10 of A-Z0-9, never normalising",
        arguments: [
            "abcde12345", "ABCDE1234", "ABCDE123456", "ABCDE 2345", "ABCDE1234\u{0}", "ＡBCDE12345", " ABCDE1234",
        ])
    func refusesTeamIDs(_ teamID: String) {
        #expect(throws: AttestError(.invalidAppID, "")) { try AppID(teamID: teamID, bundleID: "com.example.app") }
    }

    @Test(
        "refuses bundle IDs that are not ASCII reverse-DNS",
        arguments: [
            "", "com.example.app\u{0}", "com.example.app ", "com.еxample.app", ".com.example", "com..example", "com.example.",
            "com/example", String(repeating: "a", count: 156),
        ])
    func refusesBundleIDs(_ bundleID: String) {
        #expect(throws: AttestError(.invalidAppID, "")) { try AppID(teamID: "ABCDE12345", bundleID: bundleID) }
    }

    @Test("hashes the UTF-8 App ID for rpIdHash")
    func rpIDHash() throws {
        // SHA-256("ABCDE12345.com.example.app"), computed with `printf %s ... | openssl dgst -sha256`.
        #expect(
            Hex.encode(try AppID("ABCDE12345.com.example.app").rpIDHash)
                == "78fac4e89cefcde20ecc77ec10d0db108e4ec3348b0c8cbafdf92cb4583f9882")
    }
}
