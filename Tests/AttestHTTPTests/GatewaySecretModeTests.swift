import AttestObservability
import AttestServer
import AttestTesting
import Foundation
import Testing

/// The start-up warning about the gateway secret file's mode: the package's own
/// `0640 root:attestd` is fine; a file other users can read, or a group attestd is not in, is not.
@Suite("attestd: the gateway secret file's mode")
struct GatewaySecretModeTests {
    /// The log of an application started with a gateway secret file of `mode` and group `group`
    /// (nil: the file's default group, the test's own).
    static func startupLog(mode: Int, group: gid_t? = nil) throws -> String {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("gateway.secret")
        try "a-gateway-secret-of-enough-length\n".write(to: secret, atomically: true, encoding: .utf8)
        if let group { #expect(chown(secret.path, getuid(), group) == 0, "chown") }
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: secret.path)
        var configuration = ServerConfiguration()
        configuration.database = .sqlite(path: directory.appendingPathComponent("attestd.sqlite").path)
        configuration.gatewaySecretFile = secret.path
        let sink = MemorySink()
        let application = try Application(configuration: configuration, version: "test", logger: Logger(sink: sink))
        application.close()
        return sink.all
    }

    @Test("no warning for 0640 in attestd's own group, nor for 0600")
    func ownGroup() throws {
        #expect(!(try Self.startupLog(mode: 0o640)).contains("gateway secret file can be read"))
        #expect(!(try Self.startupLog(mode: 0o600)).contains("gateway secret file can be read"))
    }

    @Test("a warning for a file other users can read")
    func otherUsers() throws {
        #expect(try Self.startupLog(mode: 0o644).contains("can be read by other users"))
        #expect(try Self.startupLog(mode: 0o604).contains("can be read by other users"))
    }

    @Test("a warning for 0640 in a group attestd is not in", .enabled(if: getuid() == 0))
    func foreignGroup() throws {
        // nogroup: a group this (root) test process is not in.
        let foreign: gid_t = 65_534
        #expect(getegid() != foreign)
        #expect(try Self.startupLog(mode: 0o640, group: foreign).contains("can be read by a group attestd is not in"))
    }
}
