import AttestCLI
import AttestCrypto
import AttestService
import AttestStorage
import Foundation
import Testing

@Suite("attestctl integration set-fraud-key")
struct FraudKeyCommandTests {
    let directory: URL
    let database: String
    let clientID: String
    let pem: String
    let secretsKey: [UInt8]

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestctl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        database = directory.appendingPathComponent("attestd.sqlite").path
        _ = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        let create = Console()
        _ = create.run([
            "integration", "create", "--db", database, "--workspace", "ws1", "--name", "Demo", "--team-id", "ABCDE12345", "--bundle-id",
            "com.example.a",
        ])
        clientID = create.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        pem = try PrivateKey.generate(.p256).pem
        secretsKey = try SecureRandom.bytes(32)
    }

    func console(keyPEM: String? = nil) -> Console {
        Console(files: ["AuthKey.p8": Array((keyPEM ?? pem).utf8), "secrets.key": Array((Hex.encode(secretsKey) + "\n").utf8)])
    }

    func arguments(_ extra: [String] = []) -> [String] {
        [
            "integration", "set-fraud-key", clientID, "--key-id", "ABC123DEFG", "--key-file", "AuthKey.p8", "--secrets-key-file",
            "secrets.key", "--db", database,
        ]
            + extra
    }

    @Test("reads the key from standard input with --key-file - (a key the attestd user cannot open in the operator's directory)")
    func keyFromStandardInput() throws {
        let run = Console(files: ["secrets.key": Array((Hex.encode(secretsKey) + "\n").utf8)], stdin: Array(pem.utf8))
        var arguments = arguments()
        arguments[arguments.firstIndex(of: "AuthKey.p8") ?? 0] = "-"
        #expect(run.run(arguments) == 0)
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        let stored = try #require(try store.fraudKey(clientID: clientID))
        let opened = try SealedBox.open(
            stored.sealedKey, key: secretsKey, associatedData: FraudKeySealing.associatedData(clientID: clientID, keyID: "ABC123DEFG"))
        #expect(opened == Array(pem.utf8))
    }

    @Test("stores the key sealed (no key bytes in the database row), audits the key ID, prints no key material")
    func sealsAndStores() throws {
        let run = console()
        #expect(run.run(arguments(["--json"])) == 0)
        #expect(run.json["key_id"] as? String == "ABC123DEFG")
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        let stored = try #require(try store.fraudKey(clientID: clientID))
        #expect(stored.keyID == "ABC123DEFG")
        let der = try #require(Base64Text.decode(pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()))
        #expect(!contains(stored.sealedKey, der.suffix(32)))
        #expect(!contains(stored.sealedKey, Array(pem.utf8.dropFirst(40).prefix(24))))
        let opened = try SealedBox.open(
            stored.sealedKey, key: secretsKey, associatedData: FraudKeySealing.associatedData(clientID: clientID, keyID: "ABC123DEFG"))
        #expect(opened == Array(pem.utf8))
        let body = String(pem.split(separator: "\n")[1])
        let printed = run.out.withLock { $0 } + run.err.withLock { $0 }
        #expect(!printed.contains(body))
        #expect(!printed.contains(Hex.encode(secretsKey)))
        let audit = try store.auditPage(AuditQuery(workspaceID: nil)).entries.first?.entry
        #expect(audit?.action.rawValue == "integration.set-fraud-key")
        #expect(audit?.target == clientID)
        #expect(audit?.detail == "key id ABC123DEFG")
        // integration show --json keeps the key apart.
        let show = Console()
        #expect(show.run(["integration", "show", clientID, "--db", database, "--json"]) == 0)
        #expect(!show.out.withLock { $0.contains(body) || $0.contains("sealed") })
    }

    @Test("refuses a key that is not P-256 (64), a malformed key ID (64), a bad secrets key file (1), an unknown integration (1)")
    func refusals() throws {
        let p384 = try PrivateKey.generate(.p384).pem
        #expect(console(keyPEM: p384).run(arguments()) == 64)
        #expect(console(keyPEM: "not a key").run(arguments()) == 64)
        var bad = arguments()
        bad[4] = "abc"
        #expect(console().run(bad) == 64)
        let shortSecrets = Console(files: ["AuthKey.p8": Array(pem.utf8), "secrets.key": Array("abcd".utf8)])
        #expect(shortSecrets.run(arguments()) == 1)
        var unknown = arguments()
        unknown[2] = "clid_00000000000000000000000000000000"
        let run = console()
        #expect(run.run(unknown) == 1)
        #expect(run.err.withLock { $0.contains("no integration") })
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        #expect(try store.fraudKey(clientID: clientID) == nil)
    }

    func contains(_ haystack: [UInt8], _ needle: some Collection<UInt8>) -> Bool {
        let needle = Array(needle)
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}
