import AttestTesting
import Foundation
import Testing

/// Settings that cannot break the next start unseen: `--check-config` says what a start would
/// refuse (file, line, key; never a value), a failed reload is a gauge, and a setting removed
/// from the file returns to the flags' value.
@Suite("attestd, checking and reloading its settings")
struct AttestdConfigTests {
    private func write(_ text: String, to file: URL) throws {
        try text.write(to: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
    }

    @Test("--check-config names the file, line and key of each problem, never the value, and exits 1; 0 when every file reads")
    func checkConfig() throws {
        let directory = try temporaryDirectory()
        let settings = directory.appendingPathComponent("attestd.conf")
        let secrets = directory.appendingPathComponent("gateway.secret")
        let pasted = "hunter2-a-pasted-secret"
        try write("# settings\nlog-level = info\ngateway-secret = \(pasted)\n", to: settings)
        try write("first-gateway-secret-0123456789\n\nshort-\(pasted.prefix(4))\n", to: secrets)
        let refused = try AttestdProcess(
            arguments: ["--check-config", "--config", settings.path, "--gateway-secret-file", secrets.path], directory: directory)
        let (status, output) = refused.finish()
        #expect(status == 1)
        #expect(output.contains("\(settings.path) line 3: 'gateway-secret' cannot be set here"), "\(output)")
        #expect(output.contains("\(secrets.path) line 3: a gateway secret must be at least 16 characters"), "\(output)")
        #expect(!output.contains(pasted) && !output.contains("short-"))
        // Nothing was opened: no database created by a check.
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("attestd.sqlite").path))

        try write("log-level = warning\n", to: settings)
        try write("first-gateway-secret-0123456789\n", to: secrets)
        let fine = try AttestdProcess(
            arguments: ["--check-config", "--config", settings.path, "--gateway-secret-file", secrets.path], directory: directory)
        #expect(fine.finish().status == 0)

        // The environment counts as a start's does (the unit sets ATTESTD_CONFIG).
        let missing = try AttestdProcess(
            arguments: ["--check-config", "--config", directory.appendingPathComponent("absent.conf").path], directory: directory)
        let (missingStatus, missingOutput) = missing.finish()
        #expect(missingStatus == 1)
        #expect(missingOutput.contains("absent.conf does not exist"))
    }

    @Test(
        "a reload that fails turns attestd_config_last_reload_successful to 0 until one succeeds; a removed log-level returns to the flag's"
    )
    func reloadGauge() throws {
        let directory = try temporaryDirectory()
        let settings = directory.appendingPathComponent("attestd.conf")
        try write("# nothing set yet\n", to: settings)
        let attestd = try AttestdProcess(
            arguments: ["--listen", "127.0.0.1:0", "--config", settings.path, "--log-level", "info"], directory: directory)
        let port = try #require(attestd.listeningPort())
        func gauge() -> String? {
            let metrics = try? RawHTTPClient(port: port).request("GET", "/metrics").text
            return metrics?.split(separator: "\n").first { $0.hasPrefix("attestd_config_last_reload_successful ") }.map(String.init)
        }
        #expect(gauge() == "attestd_config_last_reload_successful 1")

        try write("log-level = loud\n", to: settings)
        kill(attestd.process.processIdentifier, SIGHUP)
        #expect(attestd.logShows("settings not reloaded", within: 5))
        #expect(gauge() == "attestd_config_last_reload_successful 0")

        try write("log-level = warning\n", to: settings)
        kill(attestd.process.processIdentifier, SIGHUP)
        #expect(attestd.logShows(#""log_level":"warning""#, within: 5))
        #expect(gauge() == "attestd_config_last_reload_successful 1")

        try write("# log-level removed\n", to: settings)
        kill(attestd.process.processIdentifier, SIGHUP)
        #expect(attestd.logShows(#""log_level":"info""#, within: 5), "the flag's level, not the file's last one")
        attestd.process.terminate()
        #expect(attestd.finish().status == 0)
    }
}
