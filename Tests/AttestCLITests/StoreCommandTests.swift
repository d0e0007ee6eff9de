import AttestCLI
import AttestOptions
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Testing

@Suite("attestctl store copy")
struct StoreCommandTests {
    /// A SQLite database as attestd leaves it: one active and one revoked integration, devices, tokens.
    static func populatedSQLite() throws -> (location: TestStoreLocation, store: any TokenStore) {
        let location = try TestStoreLocation(.sqlite)
        let store = try location.open(at: 0)
        let admin = IntegrationAdmin(store: store, clock: SettableWallClock(1_800_000_000))
        let kept = try admin.create(
            workspaceID: "ws", name: "kept", teamID: "ABCDE12345", bundleIDs: ["com.example.a"], environments: [.production])
        let gone = try admin.create(
            workspaceID: "ws", name: "gone", teamID: "ABCDE12345", bundleIDs: ["com.example.b"], environments: [.production])
        _ = try admin.revoke(clientID: gone.clientID)
        for seed in UInt8(1)...3 {
            let id = [UInt8](repeating: seed, count: 32)
            #expect(try store.insertChallenge(id: id, clientID: kept.clientID, createdAt: 1_800_000_000, expiresAt: 1_800_000_300))
            let device = DeviceRecord(
                keyID: [UInt8](repeating: seed, count: 32), clientID: kept.clientID, publicKey: [4] + [UInt8](repeating: seed, count: 64),
                counter: UInt32(seed), environment: .production, receipt: [], status: .active, createdAt: 1_800_000_000,
                updatedAt: 1_800_000_000)
            let token = TokenRecord(
                tokenHash: [UInt8](repeating: seed, count: 32), clientID: kept.clientID, workspaceID: "ws", keyID: device.keyID,
                scope: "messages", issuedAt: 1_800_000_000, expiresAt: 1_800_000_000 + (seed == 3 ? 10 : 3600))
            _ = try store.registerDevice(device, firstToken: token, consumingChallenge: id, at: 1_800_000_000)
        }
        try store.addVerificationCounts([
            VerificationCount(clientID: kept.clientID, start: 1_799_996_400, kind: .attestation, outcome: "ok", count: 3),
            VerificationCount(clientID: kept.clientID, start: 1_799_996_400, kind: .assertion, outcome: "assertion_counter", count: 1),
        ])
        return (location, store)
    }

    @Test(
        "copies integrations (revoked too), devices with counters and every token into an empty database and reports the counts",
        arguments: StoreBackend.available)
    func copy(_ backend: StoreBackend) throws {
        let (source, store) = try Self.populatedSQLite()
        let target = try TestStoreLocation(backend == .sqlite ? .sqlite : .postgresql)
        // On a host whose clock runs two hours fast: the tokens are copied all the same,
        // expired ones too (the target's purge deletes those by its own clock).
        let console = Console(now: 1_800_000_100 + 7200)
        let before = try store.snapshot(at: 1_800_000_100)
        #expect(console.run(["store", "copy", "--from", source.argument, "--to", target.argument, "--json"]) == 0)
        #expect(console.json["audit_entries"] as? Int == before.auditEntries.count)
        #expect(console.json["admin_keys"] as? Int == 0)
        #expect(console.json["verification_counts"] as? Int == 2 && before.verificationCounts.count == 2)
        #expect(console.json["source_marked_moved"] as? Bool == (backend == .postgresql))
        #expect(console.json["integrations"] as? Int == 2)
        #expect(console.json["revoked_integrations"] as? Int == 1)
        #expect(console.json["devices"] as? Int == 3)
        #expect(console.json["tokens"] as? Int == 3)
        let copied = try TokenStores.openExisting(target.location, busyTimeout: .milliseconds(1000))
        #expect(try copied.snapshot(at: 1_800_000_100) == before)
        if let password = target.password { #expect(!console.out.withLock { $0.contains(password) }) }

        let again = Console(now: 1_800_000_100)
        #expect(again.run(["store", "copy", "--from", source.argument, "--to", target.argument]) == 1)
        #expect(again.err.withLock { $0.contains("holds 2 integrations already") })
        #expect(try copied.snapshot(at: 1_800_000_100).integrations.count == 2)
    }

    @Test(
        "a SQLite file copied to PostgreSQL is marked moved: attestd's store and attestctl refuse it, naming where it went; it can be copied again",
        .enabled(if: StoreBackend.available.contains(.postgresql)))
    func movedFileCannotComeBack() throws {
        let (source, _) = try Self.populatedSQLite()
        let target = try TestStoreLocation(.postgresql)
        let move = Console(now: 1_800_000_100)
        #expect(move.run(["store", "copy", "--from", source.argument, "--to", target.argument, "--actor", "ana"]) == 0)
        #expect(move.out.withLock { $0.contains("is marked moved") })
        let redacted = target.location.redacted
        // attestd's way in (open and migrate) and attestctl's (an existing store).
        let refusedStart = storageError { () throws(StorageError) in
            _ = try TokenStores.open(source.location, connections: 1, busyTimeout: .seconds(1), migrateAt: 0)
        }
        #expect(refusedStart?.code == .moved)
        #expect(refusedStart?.reason.contains(redacted) == true)
        if let password = target.password { #expect(refusedStart?.reason.contains(password) == false) }
        let list = Console(now: 1_800_000_100)
        #expect(list.run(["integration", "list", "--db", source.argument]) == 1)
        #expect(list.err.withLock { $0.contains("was moved to \(redacted)") })
        #expect(Console(now: 1_800_000_100).run(["migrate", "--db", source.argument]) == 1)
        // The move is in the file's own audit log, by whom.
        let copy = try TestStoreLocation(.sqlite)
        let again = Console(now: 1_800_000_200)
        #expect(again.run(["store", "copy", "--from", source.argument, "--to", copy.argument, "--json"]) == 0)
        #expect(again.json["source_marked_moved"] as? Bool == false)
        let copied = try TokenStores.openExisting(copy.location, busyTimeout: .seconds(1))
        let moveEntry = try #require(try copied.snapshot(at: 0).auditEntries.last)
        #expect(moveEntry.action == .storeMove && moveEntry.target == redacted && moveEntry.actor == "ana (attestctl)")
        // A copy to SQLite moves nothing: its source stays usable.
        #expect(Console(now: 1_800_000_300).run(["integration", "list", "--db", copy.argument]) == 0)
    }

    private func storageError(_ body: () throws(StorageError) -> Void) -> StorageError? {
        do {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test("refuses a missing source and the same database on both sides")
    func refusals() throws {
        let target = try TestStoreLocation(.sqlite)
        let missing = Console()
        #expect(missing.run(["store", "copy", "--from", "/nonexistent/attestd.sqlite", "--to", target.argument]) == 1)
        #expect(missing.err.withLock { $0.contains("attestd creates it") })
        #expect(Console().run(["store", "copy", "--from", target.argument, "--to", target.argument]) == 64)
    }
}

@Suite("attestctl store backup")
struct StoreBackupTests {
    @Test(
        "writes a consistent copy of the live database, audit log included, to a new file of mode 0600", arguments: StoreBackend.available)
    func backup(_ backend: StoreBackend) throws {
        let (sqlite, populated) = try StoreCommandTests.populatedSQLite()
        // Before the copy to PostgreSQL writes its move into the SQLite file's own audit log.
        let original = try populated.snapshot(at: 1_800_000_100)
        let location: TestStoreLocation
        if backend == .sqlite {
            location = sqlite
        } else {
            location = try TestStoreLocation(.postgresql)
            #expect(Console(now: 1_800_000_100).run(["store", "copy", "--from", sqlite.argument, "--to", location.argument]) == 0)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestd-backup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("backup.sqlite").path
        let console = Console(now: 1_800_000_100)
        #expect(console.run(["store", "backup", "--db", location.argument, "--to", file, "--json"]) == 0)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o600)
        let copy = try TokenStores.openExisting(.sqlite(path: file), busyTimeout: .milliseconds(1000))
        let backedUp = try copy.snapshot(at: 1_800_000_100)
        #expect(backedUp.integrations == original.integrations)
        #expect(backedUp.devices == original.devices)
        #expect(backedUp.tokens == original.tokens)
        #expect(backedUp.auditEntries.count == original.auditEntries.count)
        #expect(!original.auditEntries.isEmpty)
        // Never over an existing file.
        let again = Console(now: 1_800_000_100)
        #expect(again.run(["store", "backup", "--db", location.argument, "--to", file]) == 1)
        #expect(again.err.withLock { $0.contains("it exists already") })
        // A directory this user may not write (sysfs: not even root), and one that does not exist:
        // each said as it is.
        let denied = Console(now: 1_800_000_100)
        #expect(denied.run(["store", "backup", "--db", location.argument, "--to", "/sys/attestd-backup.sqlite"]) == 1)
        #expect(denied.err.withLock { $0.contains("cannot write into /sys") })
        let nowhere = Console(now: 1_800_000_100)
        #expect(nowhere.run(["store", "backup", "--db", location.argument, "--to", "/nonexistent-\(UUID().uuidString)/b.sqlite"]) == 1)
        #expect(nowhere.err.withLock { $0.contains("does not exist") })
    }
}

@Suite("Releases and migrations")
struct ReleaseMigrationTests {
    @Test("each release adds at most the one migration a binary of the release before runs on; the last is this build's")
    func releasesAddOneMigrationEach() throws {
        let releases = Migration.releases
        for (earlier, later) in zip(releases, releases.dropFirst()) {
            #expect(later.newestMigration - earlier.newestMigration <= Migration.compatibleAhead, "\(later.version)")
            #expect(later.newestMigration >= earlier.newestMigration)
        }
        let last = try #require(releases.last)
        #expect(last.version == BuildVersion.current)
        for dialect in SQLDialect.allCases {
            #expect(EmbeddedMigrations.all(dialect).map(\.id).max() == last.newestMigration, "\(dialect)")
            // What --version, /healthz and attestd_build_info report as the build's schema.
            #expect(EmbeddedMigrations.all(dialect).map(\.id).max() == BuildVersion.schema, "\(dialect)")
        }
    }
}
