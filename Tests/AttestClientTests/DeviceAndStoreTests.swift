import AttestClient
import AttestClientSimulator
import AttestTesting
import Foundation
import Testing

@Suite("FileKeyIDStore: the key ID's text and nothing else, written atomically, mode 0600")
struct FileKeyIDStoreTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("key-store-\(UUID().uuidString)")

    @Test("nothing saved reads as nil; a save writes exactly the text with mode 0600 and leaves no temporary file")
    func savesExactly() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileKeyIDStore(url: directory.appendingPathComponent("nested/key-id"))
        #expect(try store.load() == nil)
        let keyID = Data(repeating: 7, count: 32).base64EncodedString()
        try store.save(keyID)
        #expect(try store.load() == keyID)
        #expect(try Data(contentsOf: store.url) == Data(keyID.utf8))
        let attributes = try FileManager.default.attributesOfItem(atPath: store.url.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let parent = try FileManager.default.attributesOfItem(atPath: store.url.deletingLastPathComponent().path)
        #expect((parent[.posixPermissions] as? Int) == 0o700)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.url.deletingLastPathComponent().path) == ["key-id"])
    }

    @Test("a save replaces the saved key ID; remove forgets it, and removing nothing is not an error")
    func replacesAndRemoves() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileKeyIDStore(url: directory.appendingPathComponent("key-id"))
        try store.save(Data(repeating: 1, count: 32).base64EncodedString())
        try store.save(Data(repeating: 2, count: 32).base64EncodedString())
        #expect(try store.load() == Data(repeating: 2, count: 32).base64EncodedString())
        try store.remove()
        #expect(try store.load() == nil)
        try store.remove()
    }

    @Test("a damaged file is an error, not 'no key' (which would attest a new key at every launch)")
    func damagedFileThrows() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("key-id")
        try Data("not base64 !".utf8).write(to: url)
        #expect(throws: FileKeyIDStore.Failure.self) { try FileKeyIDStore(url: url).load() }
    }
}

@Suite("SimulatedAppAttestDevice: Apple's four calls on a simulator state directory")
struct SimulatedDeviceTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("simulated-device-\(UUID().uuidString)")

    func device(_ reattestation: SimulatedAppAttestDevice.Reattestation = .refused) throws -> SimulatedAppAttestDevice {
        try SimulatedAppAttestDevice(
            stateDirectory: directory, teamID: ClientWorld.teamID, bundleID: ClientWorld.bundleID, reattestation: reattestation)
    }

    @Test("answers invalidKey where DCAppAttestService does: an unknown key, a second attestation, an assertion before attestation")
    func invalidKeyLikeApple() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let device = try device()
        #expect(device.isSupported)
        let hash = Data(repeating: 9, count: 32)
        let unknown = Data(repeating: 3, count: 32).base64EncodedString()
        await #expect(throws: AppAttestDeviceError.invalidKey) { try await device.attestKey(unknown, clientDataHash: hash) }
        await #expect(throws: AppAttestDeviceError.invalidKey) { try await device.attestKey("not a key", clientDataHash: hash) }
        let keyID = try await device.generateKey()
        #expect(Data(base64Encoded: keyID)?.count == 32)
        await #expect(throws: AppAttestDeviceError.invalidKey) { try await device.generateAssertion(keyID, clientDataHash: hash) }
        _ = try await device.attestKey(keyID, clientDataHash: hash)
        await #expect(throws: AppAttestDeviceError.invalidKey) { try await device.attestKey(keyID, clientDataHash: hash) }
        _ = try await device.generateAssertion(keyID, clientDataHash: hash)
        // .allowed attests again, for tests of attestd's 409.
        _ = try await self.device(.allowed).attestKey(keyID, clientDataHash: hash)
    }

    @Test("another instance on the same directory is the same device: its keys, attested state and counter")
    func survivesRestart() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let hash = Data(repeating: 5, count: 32)
        let keyID = try await device().generateKey()
        _ = try await device().attestKey(keyID, clientDataHash: hash)
        var counters: [UInt32] = []
        for _ in 0..<3 {
            let assertion = try await device().generateAssertion(keyID, clientDataHash: hash)
            counters.append(try Self.counter(of: assertion))
        }
        #expect(counters == [1, 2, 3])
        // Concurrent assertions never share a counter.
        let device = try device()
        let concurrent = try await withThrowingTaskGroup(of: UInt32.self) { group in
            for _ in 0..<20 { group.addTask { try Self.counter(of: try await device.generateAssertion(keyID, clientDataHash: hash)) } }
            return try await group.reduce(into: [UInt32]()) { $0.append($1) }
        }
        #expect(Set(concurrent) == Set(4...23))
    }

    @Test("the root attestctl simulate --state DIR --write-trust-anchor writes is the one its attestations chain to")
    func sharesAttestctlState() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = directory.appendingPathComponent("root.pem")
        let process = Process()
        process.executableURL = Bundle.main.bundleURL.appendingPathComponent("attestctl")
        process.arguments = ["simulate", "--state", directory.appendingPathComponent("state").path, "--write-trust-anchor", root.path]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        let world = try ClientWorld(stateDirectory: directory.appendingPathComponent("state"))
        #expect(
            try String(contentsOf: world.directory.appendingPathComponent("root.pem"), encoding: .utf8)
                == String(contentsOf: root, encoding: .utf8))
        let token = try await world.client(device: try world.device(), keyStore: world.keyStore()).token()
        #expect(token.value.hasPrefix("atk_"))
    }

    /// The counter of an assertion: authenticatorData bytes 33 to 36 (big-endian).
    static func counter(of assertion: Data) throws -> UInt32 {
        // The CBOR map holds `authenticatorData` as a 37-byte string: rpIdHash, flags, counter.
        let marker = Data("authenticatorData".utf8) + Data([0x58, 37])
        let range = try #require(assertion.range(of: marker))
        let bytes = Array(assertion[range.upperBound + 33..<range.upperBound + 37])
        return bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }
}
