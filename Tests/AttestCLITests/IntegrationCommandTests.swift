import AttestCLI
import AttestCrypto
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

@Suite("attestctl integration")
struct IntegrationCommandTests {
    let directory: URL
    let database: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestctl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        database = directory.appendingPathComponent("attestd.sqlite").path
        // attestd creates and migrates the database when it first starts; attestctl never does.
        _ = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
    }

    func create(_ console: Console, extra: [String] = []) -> Int32 {
        console.run(
            [
                "integration", "create", "--db", database, "--workspace", "ws1", "--name", "Demo", "--team-id", "ABCDE12345",
                "--bundle-id", "com.example.a", "--bundle-id", "com.example.b",
            ] + extra)
    }

    @Test("create prints the new client ID; list and show find it")
    func createListShow() throws {
        let console = Console()
        #expect(create(console) == 0)
        let clientID = console.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(clientID.hasPrefix("clid_"))
        // The administrative action is logged as one JSON line on stderr.
        let logLine = try #require(console.err.withLock { $0 }.split(separator: "\n").first)
        let log = try #require(try JSONSerialization.jsonObject(with: Data(logLine.utf8)) as? [String: Any])
        #expect(log["msg"] as? String == "integration created")
        #expect(log["client.id"] as? String == clientID)
        #expect(log["tool"] as? String == "attestctl")
        let list = Console()
        #expect(list.run(["integration", "list", "--db", database]) == 0)
        #expect(list.out.withLock { $0.contains(clientID) && $0.contains("active") })
        let show = Console()
        #expect(show.run(["integration", "show", clientID, "--db", database, "--json"]) == 0)
        #expect(show.json["bundle_ids"] as? [String] == ["com.example.a", "com.example.b"])
        #expect(show.json["environments"] as? [String] == ["production"])
        #expect(show.json["team_id"] as? String == "ABCDE12345")
    }

    @Test("uses ATTESTD_DB when --db is not given")
    func environmentDatabase() throws {
        let console = Console(environment: ["ATTESTD_DB": database])
        #expect(
            console.run(["integration", "create", "--workspace", "w", "--name", "n", "--team-id", "ABCDE12345", "--bundle-id", "a.b"]) == 0)
        let store = try SQLiteTokenStore(path: database, readerCount: 1, migrateAt: 0)
        #expect(try store.integrations().count == 1)
    }

    @Test(
        "refuses invalid team and bundle IDs with exit 64 and a clear message",
        arguments: [
            ["--team-id", "abcde12345", "--bundle-id", "com.example.a"], ["--team-id", "ABCDE12345", "--bundle-id", "com.example.a "],
            ["--team-id", "ABCDE12345", "--bundle-id", "com.example.a", "--environment", "staging"], ["--team-id", "ABCDE12345"],
        ])
    func invalid(_ arguments: [String]) {
        let console = Console()
        #expect(console.run(["integration", "create", "--db", database, "--workspace", "ws", "--name", "n"] + arguments) == 64)
        #expect(console.err.withLock { $0.contains("usage: attestctl integration create") })
    }

    @Test("revoke asks for confirmation, is idempotent and reports what it cut off")
    func revoke() throws {
        let console = Console()
        #expect(create(console) == 0)
        let clientID = console.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        let declined = Console(lines: ["no"])
        #expect(declined.run(["integration", "revoke", clientID, "--db", database]) == 1)
        #expect(declined.err.withLock { $0.contains("not revoked") })
        let confirmed = Console(lines: ["yes"])
        #expect(confirmed.run(["integration", "revoke", clientID, "--db", database]) == 0)
        #expect(confirmed.out.withLock { $0.contains("0 tokens revoked, 0 devices blocked") })
        #expect(confirmed.err.withLock { $0.contains(#""msg":"integration revoked""#) && $0.contains(clientID) })
        let again = Console()
        #expect(again.run(["integration", "revoke", clientID, "--db", database, "--yes", "--json"]) == 0)
        #expect(again.json["already_revoked"] as? Bool == true)
        let unknown = Console()
        #expect(unknown.run(["integration", "revoke", "clid_unknown", "--db", database, "--yes"]) == 1)
    }

    @Test("revoke with the real binary while a server connection holds the same database")
    func concurrentUse() throws {
        let console = Console()
        #expect(create(console) == 0)
        let clientID = console.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        // The server's store stays open (WAL, its own connections) while attestctl revokes.
        let serverStore = try SQLiteTokenStore(path: database, migrateAt: 0)
        #expect(try serverStore.integration(clientID: clientID)?.status == .active)
        let process = Process()
        process.executableURL = AttestCtlBinaryTests.binary
        process.arguments = ["integration", "revoke", clientID, "--db", database, "--yes"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(try serverStore.integration(clientID: clientID)?.status == .revoked)
    }

    @Test("refuses a path with no database, for every command, and leaves no file behind")
    func missingDatabase() throws {
        let typo = directory.appendingPathComponent("atestd.sqlite").path
        for arguments in [
            ["integration", "list", "--db", typo], ["integration", "show", "clid_x", "--db", typo],
            ["integration", "revoke", "clid_x", "--yes", "--db", typo],
            ["integration", "create", "--db", typo, "--workspace", "w", "--name", "n", "--team-id", "ABCDE12345", "--bundle-id", "a.b"],
            ["migrate", "--db", typo],
        ] {
            let console = Console()
            #expect(console.run(arguments) == 1, "\(arguments)")
            #expect(console.err.withLock { $0.contains("attestd creates it when it first starts") }, "\(arguments)")
            #expect(!FileManager.default.fileExists(atPath: typo), "\(arguments) left a file")
        }
    }

    @Test("refuses a schema older than its own (start the new attestd first) and newer (upgrade attestctl first), changing nothing")
    func schemaVersions() throws {
        let older = directory.appendingPathComponent("older.sqlite").path
        do {
            let database = try SQLiteDatabase(path: older)
            try Migrator(migrations: []).migrate(database, at: 0)
        }
        let behind = Console()
        #expect(behind.run(["integration", "list", "--db", older]) == 1)
        #expect(behind.err.withLock { $0.contains("start the new attestd first") })
        #expect(try Migrator().appliedMigrationIDs(SQLiteDatabase(path: older)) == [])

        let database = try SQLiteDatabase(path: self.database)
        try database.immediateTransaction {
            try database.execute("INSERT INTO schema_migrations (id, name, applied_at) VALUES (999, 'future', 0)")
        }
        let ahead = Console()
        #expect(ahead.run(["integration", "list", "--db", self.database]) == 1)
        #expect(ahead.err.withLock { $0.contains("upgrade attestctl") })
    }

    @Test("migrate applies what an older database lacks, then reports it up to date")
    func migrateCommand() throws {
        let older = directory.appendingPathComponent("older.sqlite").path
        do {
            let database = try SQLiteDatabase(path: older)
            try Migrator(migrations: []).migrate(database, at: 0)
        }
        let first = Console()
        #expect(first.run(["migrate", "--db", older]) == 0)
        #expect(first.out.withLock { $0.contains("applied 0001_initial") })
        let second = Console()
        #expect(second.run(["migrate", "--db", older]) == 0)
        #expect(second.out.withLock { $0.contains("up to date") })
        #expect(Console().run(["integration", "list", "--db", older]) == 0)
    }

    @Test("accepts production keys only unless development is asked for, and logs that choice")
    func environmentDefault() throws {
        let plain = Console()
        #expect(create(plain) == 0)
        #expect(!plain.err.withLock { $0.contains("development keys") })
        let both = Console()
        #expect(create(both, extra: ["--environment", "both", "--json"]) == 0)
        #expect(both.json["environments"] as? [String] == ["development", "production"])
        #expect(both.err.withLock { $0.contains(#""level":"warning""#) && $0.contains("development keys") })
    }

    @Test(
        "device unblock makes a blocked key active again, audited with --actor; an active key changes nothing; an unknown key and a revoked integration's exit 1"
    )
    func deviceUnblock() throws {
        let console = Console()
        #expect(create(console) == 0)
        let clientID = console.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        let store = try SQLiteTokenStore(existingAt: database)
        let key = [UInt8](repeating: 9, count: 32), now: Int64 = 1_800_000_000
        #expect(try store.insertChallenge(id: key, clientID: clientID, createdAt: now, expiresAt: now + 300))
        let device = DeviceRecord(
            keyID: key, clientID: clientID, publicKey: [4] + [UInt8](repeating: 9, count: 64), counter: 0, environment: .production,
            receipt: [], status: .active, createdAt: now, updatedAt: now)
        let token = TokenRecord(
            tokenHash: key, clientID: clientID, workspaceID: "ws", keyID: key, scope: "messages", issuedAt: now, expiresAt: now + 3600)
        #expect(try store.registerDevice(device, firstToken: token, consumingChallenge: key, at: now) == .registered)
        let hex = Hex.encode(key)
        let active = Console()
        #expect(active.run(["device", "unblock", hex, "--db", database]) == 0)
        #expect(active.out.withLock { $0.contains("is not blocked: nothing changed") })
        #expect(Console().run(["device", "block", hex, "--db", database]) == 0)
        let unblocked = Console()
        #expect(unblocked.run(["device", "unblock", hex, "--db", database, "--actor", "dana"]) == 0)
        #expect(unblocked.out.withLock { $0.contains("unblocked device \(hex)") })
        #expect(try store.device(keyID: key)?.status == .active)
        let audit = Console()
        #expect(audit.run(["audit", "list", "--db", database, "--action", "device.unblock"]) == 0)
        #expect(audit.out.withLock { $0.contains("dana") && $0.contains(hex) })
        let unknown = Console()
        #expect(unknown.run(["device", "unblock", String(repeating: "00", count: 32), "--db", database]) == 1)
        #expect(unknown.err.withLock { $0.contains("no device") })
        #expect(Console().run(["device", "block", hex, "--db", database]) == 0)
        #expect(Console().run(["integration", "revoke", clientID, "--db", database, "--yes"]) == 0)
        let revoked = Console()
        #expect(revoked.run(["device", "unblock", hex, "--db", database]) == 1)
        #expect(revoked.err.withLock { $0.contains("revoked integration") })
        #expect(try store.device(keyID: key)?.status == .revoked)
    }

    @Test("token revoke, device block, suspend and resume are audited with the person behind them (SUDO_USER before USER, or --actor)")
    func incidentCommandsAudited() throws {
        let console = Console(environment: ["USER": "root", "SUDO_USER": "alice"])
        #expect(create(console) == 0)
        let clientID = console.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        let hash = String(repeating: "ab", count: 32)
        #expect(
            Console(environment: ["USER": "root", "SUDO_USER": "alice"]).run(["token", "revoke", "--sha256", hash, "--db", database]) == 0)
        #expect(Console(environment: ["USER": "bob"]).run(["integration", "suspend", clientID, "--db", database]) == 0)
        #expect(Console().run(["integration", "resume", clientID, "--db", database, "--actor", "carol"]) == 0)
        #expect(Console().run(["device", "block", String(repeating: "00", count: 32), "--db", database]) == 1)
        #expect(Console().run(["token", "revoke", "--db", database]) == 64)
        let audit = Console()
        #expect(audit.run(["audit", "list", "--db", database]) == 0)
        let lines = audit.out.withLock { $0 }.split(separator: "\n")
        // Newest first.
        #expect(lines.count == 4)
        #expect(lines[3].contains("alice (attestctl)  integration.create  \(clientID)"))
        #expect(lines[2].contains("alice (attestctl)  token.revoke  \(hash)"))
        #expect(lines[1].contains("bob (attestctl)  integration.suspend"))
        #expect(lines[0].contains("carol (attestctl)  integration.resume"))
    }

    @Test("audit list: newest first, every row (no silent stop), filters, and --limit says how to list the older ones")
    func auditListPages() throws {
        let console = Console()
        #expect(create(console) == 0)
        let clientID = console.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        // 1,201 rows: more than one page of the store's (1,000).
        for index in 0..<600 {
            #expect(Console().run(["integration", "suspend", clientID, "--db", database, "--actor", "op\(index % 2)"]) == 0)
            #expect(Console().run(["integration", "resume", clientID, "--db", database, "--actor", "op\(index % 2)"]) == 0)
        }
        let all = Console()
        #expect(all.run(["audit", "list", "--db", database]) == 0)
        let lines = all.out.withLock { $0 }.split(separator: "\n")
        #expect(lines.count == 1_201)
        #expect(lines.first?.contains("integration.resume") == true && lines.last?.contains("integration.create") == true)
        let filtered = Console()
        #expect(
            filtered.run(["audit", "list", "--db", database, "--action", "integration.create,integration.suspend", "--by", "op1"]) == 0)
        let chosen = filtered.out.withLock { $0 }.split(separator: "\n")
        #expect(chosen.count == 300 && chosen.allSatisfy { $0.contains("op1 (attestctl)  integration.suspend") })
        let limited = Console()
        #expect(limited.run(["audit", "list", "--db", database, "--limit", "3", "--json"]) == 0)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(limited.out.withLock { $0 }.utf8)) as? [[String: Any]])
        #expect(rows.count == 3)
        let said = limited.err.withLock { $0 }
        let before = try #require(said.split(separator: " ").last.map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) })
        #expect(said.contains("--before") && Int(before) == rows.last?["id"] as? Int)
        let rest = Console()
        #expect(rest.run(["audit", "list", "--db", database, "--before", before]) == 0)
        #expect(rest.out.withLock { $0 }.split(separator: "\n").count == 1_198)
        #expect(Console().run(["audit", "list", "--db", database, "--action", "nonsense"]) == 64)
    }

    @Test("a suspended integration is shown as suspended by list, show and --json; show says whether a fraud key is set")
    func suspendedIsVisible() throws {
        let console = Console()
        #expect(create(console) == 0)
        let clientID = console.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Console().run(["integration", "suspend", clientID, "--db", database]) == 0)
        let list = Console()
        #expect(list.run(["integration", "list", "--db", database]) == 0)
        #expect(list.out.withLock { $0 }.contains("\(clientID)  suspended  "))
        let show = Console()
        #expect(show.run(["integration", "show", clientID, "--db", database]) == 0)
        #expect(show.out.withLock { $0 }.contains("status:       suspended (since "))
        #expect(show.out.withLock { $0 }.contains("fraud_key:    none"))
        let json = Console()
        #expect(json.run(["integration", "show", clientID, "--db", database, "--json"]) == 0)
        #expect(json.json["status"] as? String == "suspended")
        #expect(json.json["fraud_key_id"] is NSNull)
        let store = try TokenStores.openExisting(.sqlite(path: database), busyTimeout: .seconds(1))
        #expect(try store.statistics().suspendedIntegrations == 1)
        #expect(try store.statistics().activeIntegrations == 1)
    }

    @Test("--max-live-tokens-per-device is stored with the integration")
    func maxLiveTokens() throws {
        let console = Console()
        #expect(create(console, extra: ["--max-live-tokens-per-device", "3", "--json"]) == 0)
        #expect(console.json["max_live_tokens_per_device"] as? Int == 3)
        #expect(create(Console(), extra: ["--max-live-tokens-per-device", "0"]) == 64)
    }

    @Test("create takes the receipt and risk policy, update changes only what it is given, and both are audited")
    func policy() throws {
        let created = Console()
        #expect(create(created, extra: ["--require-valid-receipt", "--max-risk-metric", "5", "--json"]) == 0)
        #expect(created.json["require_valid_receipt"] as? Bool == true)
        #expect(created.json["max_risk_metric"] as? Int == 5)
        #expect(created.json["max_new_keys_per_hour"] == nil || created.json["max_new_keys_per_hour"] is NSNull)
        let clientID = try #require(created.json["client_id"] as? String)
        let updated = Console()
        #expect(updated.run(["integration", "update", clientID, "--max-new-keys-per-hour", "100", "--db", database, "--json"]) == 0)
        #expect(updated.json["max_new_keys_per_hour"] as? Int == 100)
        #expect(updated.json["max_risk_metric"] as? Int == 5)
        #expect(updated.json["require_valid_receipt"] as? Bool == true)
        let relaxed = Console()
        #expect(
            relaxed.run(["integration", "update", clientID, "--require-valid-receipt", "no", "--max-risk-metric", "none", "--db", database])
                == 0)
        let shown = Console()
        #expect(shown.run(["integration", "show", clientID, "--db", database, "--json"]) == 0)
        #expect(shown.json["require_valid_receipt"] as? Bool == false)
        #expect(shown.json["max_risk_metric"] == nil || shown.json["max_risk_metric"] is NSNull)
        #expect(Console().run(["integration", "update", clientID, "--db", database]) == 64)
        #expect(Console().run(["integration", "update", clientID, "--max-risk-metric", "-1", "--db", database]) == 64)
        let audit = Console()
        #expect(audit.run(["audit", "list", "--db", database]) == 0)
        #expect(audit.out.withLock { $0.components(separatedBy: "integration.update").count - 1 } == 2)
    }

    @Test("device list and show give status, counter, environment, receipt and live tokens")
    func devices() throws {
        let created = Console()
        #expect(create(created) == 0)
        let clientID = created.out.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
        let store = try SQLiteTokenStore(existingAt: database)
        let keyID = [UInt8](repeating: 7, count: 32)
        #expect(
            try store.insertChallenge(
                id: [UInt8](repeating: 1, count: 32), clientID: clientID, createdAt: 1_800_000_000, expiresAt: 1_800_000_300))
        let state = ReceiptState(
            verdict: .valid, type: .attest, createdAt: 1_799_999_000, expiresAt: 1_807_775_000, riskMetric: nil, refreshedAt: nil)
        _ = try store.registerDevice(
            DeviceRecord(
                keyID: keyID, clientID: clientID, publicKey: [4] + [UInt8](repeating: 2, count: 64), counter: 3, environment: .production,
                receipt: [], status: .active, createdAt: 1_800_000_000, updatedAt: 1_800_000_000, receiptState: state),
            firstToken: TokenRecord(
                tokenHash: [UInt8](repeating: 9, count: 32), clientID: clientID, workspaceID: "ws1", keyID: keyID, scope: "messages",
                issuedAt: 1_800_000_000, expiresAt: 1_800_003_600),
            consumingChallenge: [UInt8](repeating: 1, count: 32), at: 1_800_000_000)
        let list = Console()
        #expect(list.run(["device", "list", "--client-id", clientID, "--db", database, "--json"]) == 0)
        let devices = try #require(try JSONSerialization.jsonObject(with: Data(list.out.withLock { $0 }.utf8)) as? [[String: Any]])
        #expect(devices.count == 1)
        #expect(devices.first?["counter"] as? Int == 3)
        #expect(devices.first?["live_tokens"] as? Int == 1)
        #expect((devices.first?["receipt"] as? [String: Any])?["verdict"] as? String == "valid")
        let show = Console()
        #expect(show.run(["device", "show", Hex.encode(keyID), "--db", database, "--json"]) == 0)
        #expect(show.json["status"] as? String == "active")
        #expect(Console().run(["device", "show", String(repeating: "00", count: 32), "--db", database]) == 1)
        // A malformed KEY_ID is a usage error (exit 64) for both commands that take one, whatever the database.
        for command in [["device", "show"], ["device", "block"]] {
            for malformed in [String(repeating: "00", count: 31), "not-base64!", Data(repeating: 1, count: 31).base64EncodedString()] {
                let console = Console()
                #expect(console.run(command + [malformed, "--db", database]) == 64)
                #expect(console.err.withLock { $0.contains("KEY_ID takes the 32-byte key ID") })
            }
        }
    }

    @Test("check reads the whole database: ok for a sound one")
    func check() throws {
        let console = Console()
        #expect(console.run(["check", "--db", database]) == 0)
        #expect(console.out.withLock { $0 } == "ok\n")
    }
}
