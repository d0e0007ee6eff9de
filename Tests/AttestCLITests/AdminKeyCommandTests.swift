import AttestCLI
import AttestCrypto
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

@Suite("attestctl admin-key")
struct AdminKeyCommandTests {
    let directory: URL
    let database: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestctl-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        database = directory.appendingPathComponent("attestd.sqlite").path
        _ = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
    }

    func create(_ workspace: String, _ role: String, _ name: String, json: Bool = false) -> (Int32, Console) {
        let console = Console(environment: ["USER": "alice"])
        let code = console.run(
            ["admin-key", "create", "--db", database, "--workspace", workspace, "--role", role, "--name", name] + (json ? ["--json"] : []))
        return (code, console)
    }

    @Test("revoke --compromised revokes the key, the keys it created and theirs, and lists its changes")
    func revokeCompromised() throws {
        let (code, console) = create("ws1", "owner", "Leaked laptop")
        #expect(code == 0)
        let leakedSecret = console.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(create("ws1", "owner", "Bystander").0 == 0)
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        let admin = WorkspaceAdmin(store: store)
        // The holder of the leak makes a key for themself, which makes another, and suspends an app.
        let leaked = try admin.authenticate(key: leakedSecret)
        let backdoor = try admin.createKey(leaked, name: "backup", role: .owner)
        let nested = try admin.createKey(try admin.authenticate(key: backdoor.secret), name: "nested", role: .admin)
        let integration = try IntegrationAdmin(store: store, actor: "setup").create(
            workspaceID: "ws1", name: "App", teamID: "ABCDE12345", bundleIDs: ["com.example.a"], environments: [.production])
        #expect(try admin.setSuspended(leaked, clientID: integration.clientID, true).status == .active)
        let revoke = Console(environment: ["USER": "carol"])
        #expect(revoke.run(["admin-key", "revoke", leaked.keyID, "--compromised", "--db", database]) == 0)
        let said = revoke.out.withLock { $0 }
        #expect(
            said.contains("revoked \(leaked.keyID)") && said.contains("revoked \(backdoor.record.id)")
                && said.contains("revoked \(nested.record.id)"))
        #expect(said.contains("integration.suspend  \(integration.clientID)") && said.contains("admin-key.create  \(backdoor.record.id)"))
        for secret in [leakedSecret, backdoor.secret, nested.secret] {
            #expect(throws: ServiceError.self) { try admin.authenticate(key: secret) }
        }
        let keys = try store.adminKeys(workspaceID: "ws1")
        #expect(keys.first { $0.name == "Bystander" }?.revokedAt == nil)
        #expect(Console().run(["admin-key", "revoke", "admk_0000000000000000", "--compromised", "--db", database]) == 1)
    }

    @Test("a workspace has one live primary owner: a second is refused until the operator revokes the first (review I2)")
    func onePrimaryOwner() throws {
        let (first, console) = create("ws1", "primary_owner", "Founder")
        #expect(first == 0)
        let secret = console.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        let (second, refused) = create("ws1", "primary_owner", "Successor")
        #expect(second != 0 && refused.err.withLock { $0.contains("one primary owner") })
        #expect(create("ws2", "primary_owner", "Other workspace").0 == 0)
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        let admin = WorkspaceAdmin(store: store)
        let founder = try admin.authenticate(key: secret)
        // No key of the workspace revokes the primary owner, nor makes a second one.
        #expect(throws: ServiceError.self) { try admin.createKey(founder, name: "Twin", role: .primaryOwner) }
        let owner = try admin.createKey(founder, name: "Deputy", role: .owner)
        #expect(throws: ServiceError.self) { try admin.revokeKey(try admin.authenticate(key: owner.secret), id: founder.keyID) }
        // The operator moves ownership in two steps: revoke, then create.
        #expect(Console().run(["admin-key", "revoke", founder.keyID, "--db", database]) == 0)
        #expect(create("ws1", "primary_owner", "Successor").0 == 0)
    }

    @Test("create prints an adm_ key of 256 bits once and stores only its hash")
    func createStoresHash() throws {
        let (code, console) = create("ws1", "owner", "Ops owner")
        #expect(code == 0)
        let key = console.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.hasPrefix("adm_"))
        #expect(Base64Text.decode(String(key.dropFirst(4)), .url)?.count == 32)
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        let stored = try #require(try store.adminKeys(workspaceID: "ws1").first)
        #expect(stored.keyHash == Digest.sha256(Array(key.utf8)))
        #expect(stored.role == .owner && stored.name == "Ops owner" && stored.id.hasPrefix("admk_") && stored.id.count == 21)
        // The secret is in no column: the file holds the hash, not the key.
        let bytes =
            try Data(contentsOf: URL(fileURLWithPath: database))
            + ((try? Data(contentsOf: URL(fileURLWithPath: database + "-wal"))) ?? Data())
        #expect(bytes.range(of: Data(key.utf8)) == nil)
        #expect(try WorkspaceAdmin(store: store).authenticate(key: key).name == "Ops owner")
        // Its creation is audited in its workspace, by the person behind attestctl.
        let audit = try store.auditPage(AuditQuery(workspaceID: "ws1")).entries.map(\.entry)
        #expect(audit.map(\.action) == [.adminKeyCreate] && audit.first?.actor == "alice (attestctl)")
    }

    @Test("list shows one key a line, its ID first, then name, workspace and role; --workspace filters; --json too")
    func list() throws {
        #expect(create("ws1", "admin", "Alice").0 == 0)
        #expect(create("ws2", "user", "Bob").0 == 0)
        let console = Console()
        #expect(console.run(["admin-key", "list", "--db", database]) == 0)
        let lines = console.out.withLock { $0 }.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("admk_") && lines[0].contains("  Alice  ws1  admin  active"))
        let filtered = Console()
        #expect(filtered.run(["admin-key", "list", "--db", database, "--workspace", "ws2", "--json"]) == 0)
        let keys = try #require(try JSONSerialization.jsonObject(with: Data(filtered.out.withLock { $0 }.utf8)) as? [[String: Any]])
        #expect(keys.count == 1 && keys[0]["name"] as? String == "Bob" && keys[0]["role"] as? String == "user")
        #expect(keys[0]["key"] == nil && keys[0]["key_hash"] == nil)
    }

    @Test("revoke refuses the key from its next use")
    func revoke() throws {
        let (_, created) = create("ws1", "owner", "Leaver")
        let key = created.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        let id = try #require(try store.adminKeys(workspaceID: "ws1").first?.id)
        #expect(throws: Never.self) { try WorkspaceAdmin(store: store).authenticate(key: key) }
        let console = Console()
        #expect(console.run(["admin-key", "revoke", id, "--db", database]) == 0)
        #expect(throws: ServiceError.self) { try WorkspaceAdmin(store: store).authenticate(key: key) }
        let again = Console()
        #expect(again.run(["admin-key", "revoke", id, "--db", database]) == 0)
        #expect(again.out.withLock { $0.contains("already revoked") })
        #expect(Console().run(["admin-key", "revoke", "admk_0000000000000000", "--db", database]) == 1)
    }

    @Test("disable refuses the key until enable; --expires-in sets an expiry list shows; a lifetime out of range is a usage error")
    func disableEnableExpiry() throws {
        let (_, created) = create("ws1", "admin", "Laptop")
        let key = created.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        let id = try #require(try store.adminKeys(workspaceID: "ws1").first?.id)
        #expect(Console().run(["admin-key", "disable", id, "--db", database]) == 0)
        #expect(throws: ServiceError.self) { try WorkspaceAdmin(store: store).authenticate(key: key) }
        let listed = Console()
        #expect(listed.run(["admin-key", "list", "--db", database]) == 0)
        #expect(listed.out.withLock { $0.contains("  Laptop  ws1  admin  disabled  no expiry  never used") })
        let again = Console()
        #expect(again.run(["admin-key", "disable", id, "--db", database]) == 0)
        #expect(again.out.withLock { $0.contains("nothing changed") })
        #expect(Console().run(["admin-key", "enable", id, "--db", database]) == 0)
        #expect(throws: Never.self) { try WorkspaceAdmin(store: store).authenticate(key: key) }
        #expect(Console().run(["admin-key", "enable", "admk_0000000000000000", "--db", database]) == 1)
        let actions = try store.auditPage(AuditQuery(workspaceID: "ws1")).entries.map(\.entry.action)
        #expect(Array(actions.prefix(2)) == [.adminKeyEnable, .adminKeyDisable])

        let console = Console()
        let base = ["admin-key", "create", "--db", database, "--workspace", "ws1", "--role", "user", "--name", "Temp"]
        #expect(console.run(base + ["--expires-in", "30d", "--json"]) == 0)
        let made = try #require(try JSONSerialization.jsonObject(with: Data(console.out.withLock { $0 }.utf8)) as? [String: Any])
        let createdAt = try #require(made["created_at"] as? Int)
        #expect(made["expires_at"] as? Int == createdAt + 30 * 86_400)
        for bad in ["30m", "731d", "1y"] { #expect(Console().run(base + ["--expires-in", bad]) == 64, "\(bad)") }
    }

    @Test("create refuses an unknown role and a bad workspace as usage errors")
    func usage() {
        #expect(create("ws1", "superuser", "x").0 == 64)
        #expect(create("bad workspace", "user", "x").0 == 64)
        #expect(create("ws1", "user", "").0 == 64)
    }
}
