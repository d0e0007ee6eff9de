import AttestObservability
import AttestServer
import Foundation
import Testing

@Suite("--config: the log level changes while attestd runs (SIGHUP)")
struct LiveSettingsTests {
    @Test(
        "the file's grammar: name = value lines, comments, log-level only",
        arguments: [
            ("log-level = warning\n", LiveSettings(logLevel: .warning), nil),
            ("# comment\n\n  log-level=debug  \n", LiveSettings(logLevel: .debug), nil),
            ("# nothing set\n", LiveSettings(), nil),
            ("log-level = loud\n", nil, "line 1: log-level is debug, info, warning or error"),
            ("\nlisten = 0.0.0.0:80\n", nil, "line 2: 'listen' cannot be set here"),
            ("log-level warning\n", nil, "line 1: not `name = value`"),
            ("# a secret pasted in the wrong file\npostgresql://app:hunter2@db/x = 1\n", nil, "line 2: this key cannot be set here"),
        ] as [(String, LiveSettings?, String?)])
    func grammar(text: String, expected: LiveSettings?, problem: String?) {
        do {
            let settings = try LiveSettings.parse(text, file: "attestd.conf")
            #expect(settings == expected)
            #expect(problem == nil)
        } catch {
            #expect(expected == nil)
            #expect(error.description.contains(problem ?? "no problem expected"), "\(error.description)")
        }
    }

    @Test(
        "a wrong line is named by its number and key, never by its text (review I1)",
        arguments: ["log-level = hunter2-secret\n", "hunter2-secret\n", "db-password: hunter2-secret\n", "x@hunter2-secret = 1\n"])
    func noTextInErrors(text: String) {
        #expect(throws: LiveSettings.Problem.self) { try LiveSettings.parse(text, file: "attestd.conf") }
        do {
            _ = try LiveSettings.parse(text, file: "attestd.conf")
        } catch {
            #expect(!error.description.contains("hunter2") && error.description.contains("line 1"), "\(error.description)")
        }
    }

    @Test("the level is the file's at start and after a reload; a wrong file changes nothing and says why")
    func reloadChangesTheLevel() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("attestd-\(UUID().uuidString).conf")
        defer { try? FileManager.default.removeItem(at: file) }
        try "log-level = warning\n".write(to: file, atomically: true, encoding: .utf8)
        let world = try HTTPWorld { $0.configFile = file.path }
        let client = try world.client()
        let payload = #"{"client_id":"\#(world.integration.clientID)"}"#
        func requestLines() -> Int { world.sink.lines.withLock { $0 }.filter { $0.contains(#""msg":"request""#) }.count }

        #expect(try client.postJSON("/v1/challenge", payload).status == 200)
        #expect(requestLines() == 0)  // a success is info, below the file's warning

        try "log-level = info\n".write(to: file, atomically: true, encoding: .utf8)
        world.app.reload()
        #expect(world.sink.all.contains(#""msg":"settings reloaded""#) && world.sink.all.contains(#""log_level":"info""#))
        #expect(try client.postJSON("/v1/challenge", payload).status == 200)
        #expect(requestLines() == 1)

        try "log-level = shouting\n".write(to: file, atomically: true, encoding: .utf8)
        world.app.reload()
        #expect(
            world.sink.all.contains("settings not reloaded") && world.sink.all.contains("line 1: log-level is")
                && !world.sink.all.contains("shouting"))
        #expect(try client.postJSON("/v1/challenge", payload).status == 200)
        #expect(requestLines() == 2)
    }

    @Test("a wrong --config refuses the start")
    func wrongFileRefusesStart() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("attestd-\(UUID().uuidString).conf")
        defer { try? FileManager.default.removeItem(at: file) }
        try "db = /tmp/elsewhere.sqlite\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(throws: Application.StartupError.self) { _ = try HTTPWorld { $0.configFile = file.path } }
    }
}
