import AttestCLI
import AttestOptions
import AttestTesting
import Foundation
import Synchronization
import Testing

/// Captures what a command prints, with files served from memory and a fixed clock.
final class Console: Sendable {
    let out = Mutex("")
    let err = Mutex("")
    let files: [String: [UInt8]]
    let stdin: [UInt8]
    let now: Int64
    let environment: [String: String]
    let lines: Mutex<[String]>

    init(
        files: [String: [UInt8]] = [:], stdin: [UInt8] = [], now: Int64 = 1_800_000_000, environment: [String: String] = [:],
        lines: [String] = []
    ) {
        self.files = files
        self.stdin = stdin
        self.now = now
        self.environment = environment
        self.lines = Mutex(lines)
    }

    var io: ToolIO {
        ToolIO(
            readFile: { [files] path in
                guard let bytes = files[path] else { throw CocoaError(.fileNoSuchFile) }
                return bytes
            },
            readStandardInput: { [stdin] in stdin }, now: { [now] in now },
            standardOutput: { text in self.out.withLock { $0 += text } },
            standardError: { text in self.err.withLock { $0 += text } }, environment: environment,
            readLine: { self.lines.withLock { $0.isEmpty ? nil : $0.removeFirst() } })
    }

    func run(_ arguments: [String]) -> Int32 { AttestCtl(io: io).run(arguments) }

    var json: [String: Any] {
        let text = out.withLock { $0 }
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }
}

@Suite("attestctl verify")
struct AttestCtlVerifyTests {
    let attestation: RecordedCase
    let assertion: RecordedCase

    init() throws {
        attestation = try Fixtures.recordedCase("veehaitch_ios-14.4_attestation")
        assertion = try Fixtures.recordedCase("veehaitch_ios-14.4_assertion")
    }

    func attestationArguments(object: String = "att.b64", extra: [String] = []) -> [String] {
        [
            "verify", "attestation", "--object", object, "--key-id", attestation.keyIDB64 ?? "", "--client-data-hash",
            attestation.clientDataHashB64 ?? "", "--app-id", attestation.appID,
        ] + extra
    }

    var files: [String: [UInt8]] {
        [
            "att.b64": Array(((attestation.objectB64 ?? "") + "\n").utf8),
            "ass.b64": Array((assertion.objectB64 ?? "").utf8),
            "key.pem": Array((assertion.publicKeyPEM ?? "").utf8),
        ]
    }

    @Test("prints the verified key and exits 0 for a recorded attestation at its time")
    func validAttestation() throws {
        let console = Console(files: files)
        let at = String(try #require(attestation.verifyAtUnix))
        #expect(console.run(attestationArguments(extra: ["--at", at])) == 0)
        let json = console.json
        #expect(json["valid"] as? Bool == true)
        #expect(json["environment"] as? String == "development")
        #expect(json["key_id"] as? String == attestation.keyIDB64)
        #expect((json["public_key"] as? String)?.hasPrefix("04") == true)
        #expect(json["counter"] as? Int == 0)
        #expect(json["receipt_length"] as? Int == 3703)
    }

    @Test("reads the object from standard input with '-'")
    func standardInput() throws {
        let console = Console(stdin: Array((attestation.objectB64 ?? "").utf8))
        let at = String(try #require(attestation.verifyAtUnix))
        #expect(console.run(attestationArguments(object: "-", extra: ["--at", at])) == 0)
    }

    @Test("defaults --at to now, where the recorded leaf has expired, and exits 1 with the check's code")
    func expiredNow() {
        let console = Console(files: files)
        #expect(console.run(attestationArguments()) == 1)
        #expect(console.json["code"] as? String == "chain_invalid:expired")
        #expect(console.json["valid"] as? Bool == false)
        #expect((console.json["reason"] as? String)?.isEmpty == false)
    }

    @Test("refuses a development key when --environment production")
    func environmentFlag() throws {
        let console = Console(files: files)
        let at = String(try #require(attestation.verifyAtUnix))
        #expect(console.run(attestationArguments(extra: ["--at", at, "--environment", "production"])) == 1)
        #expect(console.json["code"] as? String == "environment_not_allowed")
    }

    @Test("verifies a recorded assertion and reports its counter; refuses it at --previous-counter 1")
    func assertionCounter() {
        let base = [
            "verify", "assertion", "--object", "ass.b64", "--public-key", "key.pem", "--client-data-hash",
            assertion.clientDataHashB64 ?? "", "--app-id", assertion.appID,
        ]
        let console = Console(files: files)
        #expect(console.run(base) == 0)
        #expect(console.json["counter"] as? Int == 1)
        let replay = Console(files: files)
        #expect(replay.run(base + ["--previous-counter", "1"]) == 1)
        #expect(replay.json["code"] as? String == "counter_not_increasing")
    }

    @Test(
        "exits 64 with usage on stderr for usage errors",
        arguments: [
            ["verify", "attestation"],
            ["verify", "attestation", "--object", "att.b64", "--key-id", "x", "--client-data-hash", "AA==", "--app-id", "ABCDE12345.a"],
            ["verify", "attestation", "--object", "att.b64", "--key-id", "AA==", "--client-data-hash", "AA==", "--app-id", "lowercase.a"],
            [
                "verify", "attestation", "--object", "att.b64", "--key-id", "AA==", "--client-data-hash", "AA==", "--app-id",
                "ABCDE12345.a", "--environment", "staging",
            ],
            [
                "verify", "attestation", "--object", "att.b64", "--key-id", "AA==", "--client-data-hash", "AA==", "--app-id",
                "ABCDE12345.a", "--at", "yesterday",
            ],
            [
                "verify", "assertion", "--object", "a", "--public-key", "k", "--client-data-hash", "AA==", "--app-id", "ABCDE12345.a",
                "--previous-counter", "-1",
            ],
            ["verify", "attestation", "--bogus", "1"],
            ["frobnicate"],
            [],
        ])
    func usageErrors(_ arguments: [String]) {
        let console = Console(files: files)
        #expect(console.run(arguments) == 64)
        #expect(console.err.withLock { $0.contains("usage: attestctl") })
        #expect(console.out.withLock { $0.isEmpty })
    }

    @Test("exits 1 with a JSON code for an unreadable object file or bad base64 in it")
    func badObjectFile() {
        let missing = Console(files: files)
        #expect(missing.run(attestationArguments(object: "nope.b64")) == 1)
        #expect(missing.json["code"] as? String == "input_unreadable")
        let garbled = Console(files: ["bad.b64": Array("not base64!".utf8)])
        #expect(garbled.run(attestationArguments(object: "bad.b64")) == 1)
        #expect(garbled.json["code"] as? String == "object_encoding")
    }

    @Test("--version prints the release and exits 0")
    func version() {
        let console = Console()
        #expect(console.run(["--version"]) == 0)
        #expect(console.out.withLock { $0 } == "attestctl \(BuildVersion.current) (schema \(BuildVersion.schema))\n")
    }

    @Test("prints help on stdout and exits 0")
    func help() {
        let console = Console()
        #expect(console.run(["help", "verify", "assertion"]) == 0)
        #expect(console.out.withLock { $0.contains("--previous-counter N") })
    }
}

@Suite("attestctl, the real binary")
struct AttestCtlBinaryTests {
    /// `swift test` builds the executables too, so the binary sits beside the test bundle.
    static let binary: URL = Bundle.main.bundleURL.appendingPathComponent("attestctl")

    func run(_ arguments: [String], stdin: String = "") throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        let input = Pipe(), output = Pipe(), error = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        try process.run()
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    @Test("verifies a recorded attestation from stdin and exits 0")
    func verifiesFromStdin() throws {
        let recorded = try Fixtures.recordedCase("warden_ios16_attestation")
        let result = try run(
            [
                "verify", "attestation", "--object", "-", "--key-id", recorded.keyIDB64 ?? "", "--client-data-hash",
                recorded.clientDataHashB64 ?? "", "--app-id", recorded.appID, "--at", String(recorded.verifyAtUnix ?? 0),
                "--environment", "production",
            ],
            stdin: recorded.objectB64 ?? "")
        #expect(result.status == 0)
        #expect(result.out.contains("\"environment\" : \"production\""))
    }

    @Test("exits 64 on a usage error and 1 on a rejected object")
    func exitCodes() throws {
        #expect(try run(["verify", "attestation", "--object", "-"]).status == 64)
        let recorded = try Fixtures.recordedCase("warden_ios16_attestation")
        let rejected = try run(
            [
                "verify", "attestation", "--object", "-", "--key-id", recorded.keyIDB64 ?? "", "--client-data-hash",
                recorded.clientDataHashB64 ?? "", "--app-id", "ABCDE12345.com.example.other", "--at", String(recorded.verifyAtUnix ?? 0),
            ],
            stdin: recorded.objectB64 ?? "")
        #expect(rejected.status == 1)
        #expect(rejected.out.contains("rp_id_mismatch"))
    }
}
