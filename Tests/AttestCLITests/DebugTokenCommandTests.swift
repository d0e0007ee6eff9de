import AttestCLI
import AttestCrypto
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

@Suite("attestctl debug-token")
struct DebugTokenCommandTests {
    let directory: URL
    let database: String
    let clientID: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestctl-debug-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        database = directory.appendingPathComponent("attestd.sqlite").path
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        clientID = try #require(
            try IntegrationAdmin(store: store).create(
                workspaceID: "ws1", name: "App", teamID: "ABCDE12345", bundleIDs: ["com.example.app"], environments: [.production]
            ).issuedClientID
        ).text
    }

    func run(_ arguments: [String], input: [String] = []) -> (Int32, String, String) {
        let console = Console(environment: ["USER": "alice"], lines: input)
        let code = console.run(arguments + ["--db", database])
        return (code, console.out.withLock { $0 }, console.err.withLock { $0 })
    }

    @Test("create prints a dbg_ secret of 256 bits once and stores only its hash; list --json shows it without the secret")
    func createAndList() throws {
        let (code, out, err) = run(["debug-token", "create", "--client-id", clientID, "--name", "CI", "--expires-in", "12h"])
        #expect(code == 0, "\(err)")
        let secret = out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(secret.hasPrefix("dbg_") && Base64Text.decode(String(secret.dropFirst(4)), .url)?.count == 32)
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        let stored = try #require(try store.debugTokens(clientID: clientID).first)
        #expect(stored.secretHash == Digest.sha256(Array(secret.utf8)) && stored.expiresAt - stored.createdAt == 12 * 3600)
        #expect(stored.createdBy == "alice (attestctl)")
        let (listed, json, _) = run(["debug-token", "list", "--client-id", clientID, "--json"])
        #expect(listed == 0 && !json.contains(secret))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let row = try #require((object["debug_tokens"] as? [[String: Any]])?.first)
        #expect(row["id"] as? String == stored.id && row["name"] as? String == "CI" && row["minted"] as? Int == 0)
        #expect(row["revoked"] as? Bool == false && row.keys.contains("last_used_at") && row["expires_at"] as? Int == Int(stored.expiresAt))
        let (created, jsonOut, _) = run(["debug-token", "create", "--client-id", clientID, "--name", "Sim", "--json"])
        let made = try #require(try JSONSerialization.jsonObject(with: Data(jsonOut.utf8)) as? [String: Any])
        #expect(created == 0 && (made["secret"] as? String)?.hasPrefix("dbg_") == true && made["id"] as? String != nil)
        #expect((made["expires_at"] as? Int).map { $0 - (made["created_at"] as? Int ?? 0) } == 30 * 86_400)
    }

    @Test("--expires-in over 90 days or malformed is refused as usage, and nothing is stored")
    func lifetimeBounds() throws {
        for text in ["91d", "12x", "0h", "h", "-5m"] {
            let (code, _, _) = run(["debug-token", "create", "--client-id", clientID, "--name", "CI", "--expires-in", text])
            #expect(code == 64, "\(text)")  // EX_USAGE
        }
        #expect(run(["debug-token", "create", "--client-id", clientID, "--name", "CI", "--expires-in", "90d"]).0 == 0)
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        #expect(try store.debugTokens(clientID: clientID).count == 1)
    }

    @Test("revoke asks unless --yes, is audited, and says when there was nothing to do")
    func revoke() throws {
        _ = run(["debug-token", "create", "--client-id", clientID, "--name", "CI"])
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        let id = try #require(try store.debugTokens(clientID: clientID).first?.id)
        #expect(run(["debug-token", "revoke", id], input: ["no"]).0 == 1)
        #expect(try store.debugToken(id: id)?.revokedAt == nil)
        let (code, out, _) = run(["debug-token", "revoke", id], input: ["yes"])
        #expect(code == 0 && out.contains("revoked debug token \(id)"))
        #expect(run(["debug-token", "revoke", id, "--yes"]).1.contains("already revoked"))
        #expect(run(["debug-token", "revoke", "dbgt_0000000000000000", "--yes"]).0 == 1)
        #expect(
            try store.auditPage(AuditQuery(workspaceID: nil)).entries.map(\.entry.action).prefix(2) == [
                .debugTokenRevoke, .debugTokenCreate,
            ])
        // The workspace's admins see what the operator did to their integration's debug tokens.
        #expect(
            try store.auditPage(AuditQuery(workspaceID: "ws1")).entries.map(\.entry.action).prefix(2) == [
                .debugTokenRevoke, .debugTokenCreate,
            ])
        let (_, shown, _) = run(["integration", "show", clientID])
        #expect(shown.contains("debug_tokens: 0 live"))
    }
}
