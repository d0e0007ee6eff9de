import AttestClient
import Foundation
import Synchronization
import Testing

/// Two clients of one install (two view models in one process; an app and its extension in two)
/// share one key store: they never attest two keys and never replace a working one.
@Suite("One key per install")
struct OneKeyPerInstallTests {
    @Test("two clients in one process on one key file, 100 concurrent rounds: one key attested, every round a token")
    func twoClientsOneProcess() async throws {
        let world = try ClientWorld(network: true)
        let first = world.client(device: try world.device(), keyStore: world.keyStore())
        let second = world.client(device: try world.device(), keyStore: world.keyStore())
        let failures = Failures()
        for _ in 0..<100 {
            await withTaskGroup(of: Void.self) { group in
                for client in [first, second] {
                    group.addTask {
                        do {
                            _ = try await client.token(forcingRefresh: true)
                        } catch {
                            failures.list.withLock { $0.append("\(error)") }
                        }
                    }
                }
            }
        }
        #expect(failures.list.withLock { $0 }.isEmpty, "\(failures.list.withLock { $0.prefix(3) })")
        #expect(try world.requests("attest") == 1)
        #expect(try world.deviceKeys() == 1)
        #expect(try world.requests("token", status: 200) == 199)
    }

    @Test("two processes on one key file and one device, 100 rounds each at once: one key attested, no failure")
    func twoProcesses() async throws {
        let world = try ClientWorld(network: true)
        let probe = try #require(Self.probe())
        let keyFile = world.directory.appendingPathComponent("app/key-id").path
        let processes = try (0..<2).map { _ in
            let process = Process()
            process.executableURL = probe
            process.arguments = [world.baseURL.absoluteString, world.integration.clientID, world.stateDirectory.path, keyFile, "100"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            return (process, output)
        }
        for (process, output) in processes {
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0 && text.contains("ok 100"), "\(text)")
        }
        #expect(try world.requests("attest") == 1)
        #expect(try world.deviceKeys() == 1)
        #expect(try world.requests("token", status: 200) == 199)
    }

    final class Failures: Sendable { let list = Mutex<[String]>([]) }

    /// The probe executable beside the test bundle's build products.
    static func probe() -> URL? {
        var directory = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("attest-client-probe")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }
}
