import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// The `TokenStore` contract, run against every backend (SQLite always, PostgreSQL when
/// scripts/test provides a server): each operation's outcomes, its atomicity, and what two
/// stores on one database (two attestd nodes, or attestd and attestctl) see of each other.
@Suite("TokenStore contract")
struct TokenStoreContractTests {
    static let time: Int64 = 1_800_000_000

    /// One empty store location with a store open on it and one integration.
    struct World: Sendable {
        let location: TestStoreLocation
        let store: any TokenStore
        let integration: IntegrationRecord

        init(_ backend: StoreBackend) throws {
            location = try TestStoreLocation(backend)
            store = try location.open(at: TokenStoreContractTests.time)
            integration = Self.integration("clid_contract")
            try store.insertIntegration(integration, audit: nil)
        }

        /// A second store on the same database: another node.
        func otherNode() throws -> any TokenStore { try location.open(at: TokenStoreContractTests.time) }

        static func integration(_ clientID: String, bundleIDs: [String] = ["com.example.b", "com.example.a"]) -> IntegrationRecord {
            IntegrationRecord(
                clientID: clientID, workspaceID: "ws_1", name: "App", teamID: "ABCDE12345", bundleIDs: bundleIDs.sorted(),
                environments: [.production], status: .active, createdAt: TokenStoreContractTests.time, revokedAt: nil)
        }

        func device(_ seed: UInt8, counter: UInt32 = 0) -> DeviceRecord {
            DeviceRecord(
                keyID: [UInt8](repeating: seed, count: 32), clientID: integration.clientID,
                publicKey: [0x04] + [UInt8](repeating: seed, count: 64), counter: counter, environment: .production,
                receipt: [1, 2, 3], status: .active, createdAt: TokenStoreContractTests.time, updatedAt: TokenStoreContractTests.time,
                trustAnchor: String(repeating: "ab", count: 32), appID: "ABCDE12345.com.example.a")
        }

        func token(_ seed: UInt8, keySeed: UInt8, expiresIn: Int64 = 3600) -> TokenRecord {
            TokenRecord(
                tokenHash: [UInt8](repeating: seed, count: 32), clientID: integration.clientID, workspaceID: integration.workspaceID,
                keyID: [UInt8](repeating: keySeed, count: 32), scope: "messages", issuedAt: TokenStoreContractTests.time,
                expiresAt: TokenStoreContractTests.time + expiresIn)
        }

        /// Issues a challenge with id bytes all `seed`.
        @discardableResult
        func challenge(_ seed: UInt8, expiresIn: Int64 = 300) throws -> [UInt8] {
            let id = [UInt8](repeating: seed, count: 32)
            let stored = try store.insertChallenge(
                id: id, clientID: integration.clientID, createdAt: TokenStoreContractTests.time,
                expiresAt: TokenStoreContractTests.time + expiresIn)
            guard stored else { throw StorageError.misuse("the challenge's integration is not active") }
            return id
        }

        /// Registers device `seed` with token `seed` through challenge `seed`.
        func register(_ seed: UInt8) throws {
            let outcome = try store.registerDevice(
                device(seed), firstToken: token(seed, keySeed: seed), consumingChallenge: try challenge(seed),
                at: TokenStoreContractTests.time)
            #expect(outcome == .registered)
        }
    }

    // MARK: Integrations

    @Test(
        "an integration reads back as written, bundle IDs sorted; a second with the same client ID is refused",
        arguments: StoreBackend.available)
    func integrationRoundTrip(_ backend: StoreBackend) throws {
        let world = try World(backend)
        #expect(try world.store.integration(clientID: "clid_contract") == world.integration)
        #expect(try world.store.integration(clientID: "clid_missing") == nil)
        #expect(throws: StorageError(.constraint, "")) { try world.store.insertIntegration(world.integration, audit: nil) }
        let second = World.integration("clid_second")
        try world.store.insertIntegration(second, audit: nil)
        #expect(try world.store.integrations().map(\.clientID) == ["clid_contract", "clid_second"])
    }

    @Test("revocation deletes tokens and challenges, blocks devices, is permanent and idempotent", arguments: StoreBackend.available)
    func revocation(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        try world.register(2)
        try world.challenge(9)
        let summary = try #require(try world.store.revokeIntegration(clientID: "clid_contract", at: Self.time + 10, audit: nil))
        #expect(summary == RevocationSummary(changed: true, tokensRevoked: 2, devicesBlocked: 2))
        #expect(try world.store.activeToken(hash: world.token(1, keySeed: 1).tokenHash, at: Self.time + 11) == nil)
        #expect(try world.store.device(keyID: world.device(1).keyID)?.status == .revoked)
        #expect(try world.store.challenge(id: [UInt8](repeating: 9, count: 32)) == nil)
        let record = try #require(try world.store.integration(clientID: "clid_contract"))
        #expect(record.status == .revoked && record.revokedAt == Self.time + 10)
        #expect(try world.store.revokeIntegration(clientID: "clid_contract", at: Self.time + 20, audit: nil)?.changed == false)
        #expect(try world.store.revokeIntegration(clientID: "clid_missing", at: Self.time, audit: nil) == nil)
        #expect(try world.store.statistics().counts == [0, 0, 1])
    }

    // MARK: Challenges

    @Test(
        "a challenge is read without consuming it, consumed once by compare-and-set; an unknown one is not consumed",
        arguments: StoreBackend.available)
    func challengeLedger(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let id = try world.challenge(1)
        #expect(try world.store.challenge(id: id) == ChallengeState(clientID: "clid_contract", expiresAt: Self.time + 300, consumed: false))
        #expect(try world.store.consumeChallenge(id: id, at: Self.time))
        #expect(try world.store.challenge(id: id)?.consumed == true)
        #expect(try !world.store.consumeChallenge(id: id, at: Self.time))
        #expect(try !world.store.consumeChallenge(id: [UInt8](repeating: 7, count: 32), at: Self.time))
        #expect(throws: StorageError(.constraint, "")) { try world.challenge(1) }
        #expect(try world.store.replaceChallenge(id: id, clientID: "clid_contract", createdAt: Self.time, expiresAt: Self.time + 60))
        #expect(try world.store.challenge(id: id) == ChallengeState(clientID: "clid_contract", expiresAt: Self.time + 60, consumed: false))
    }

    @Test(
        "a challenge is stored only for an active integration: an unknown, suspended or revoked one gets none",
        arguments: StoreBackend.available)
    func challengeNeedsActiveIntegration(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let clientID = world.integration.clientID
        let ids = (9...12).map { [UInt8](repeating: $0, count: 32) }
        func insert(_ id: [UInt8], _ clientID: String) throws -> Bool {
            try world.store.insertChallenge(id: id, clientID: clientID, createdAt: Self.time, expiresAt: Self.time + 300)
        }
        #expect(try !insert(ids[0], "clid_missing"))
        #expect(try !world.store.replaceChallenge(id: ids[0], clientID: "clid_missing", createdAt: Self.time, expiresAt: Self.time + 60))
        #expect(try world.store.setSuspended(clientID: clientID, at: Self.time, audit: nil) == true)
        #expect(try !insert(ids[1], clientID))
        #expect(try world.store.setSuspended(clientID: clientID, at: nil, audit: nil) == true)
        #expect(try insert(ids[2], clientID))
        _ = try world.store.revokeIntegration(clientID: clientID, at: Self.time, audit: nil)
        #expect(try !insert(ids[3], clientID))
        #expect(try !world.store.replaceChallenge(id: ids[3], clientID: clientID, createdAt: Self.time, expiresAt: Self.time + 60))
        for id in [ids[0], ids[1], ids[3]] { #expect(try world.store.challenge(id: id) == nil) }
    }

    // MARK: Devices

    @Test("registration stores the device and its first token; a reused challenge changes nothing", arguments: StoreBackend.available)
    func registration(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        #expect(try world.store.device(keyID: world.device(1).keyID) == world.device(1))
        #expect(try world.store.activeToken(hash: world.token(1, keySeed: 1).tokenHash, at: Self.time) == world.token(1, keySeed: 1))
        let reused = try world.store.registerDevice(
            world.device(2), firstToken: world.token(2, keySeed: 2), consumingChallenge: [UInt8](repeating: 1, count: 32), at: Self.time)
        #expect(reused == .challengeUsed)
        #expect(try world.store.device(keyID: world.device(2).keyID) == nil)
        #expect(try world.store.activeToken(hash: world.token(2, keySeed: 2).tokenHash, at: Self.time) == nil)
    }

    @Test("registering a known key ID reports it and stores nothing; the challenge is spent", arguments: StoreBackend.available)
    func registrationOfKnownKey(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        let again = try world.store.registerDevice(
            world.device(1), firstToken: world.token(5, keySeed: 1), consumingChallenge: try world.challenge(5), at: Self.time)
        #expect(again == .keyExists(.active))
        #expect(try world.store.activeToken(hash: world.token(5, keySeed: 1).tokenHash, at: Self.time) == nil)
        #expect(try world.store.challenge(id: [UInt8](repeating: 5, count: 32))?.consumed == true)
    }

    @Test("registration and refresh under a revoked integration are refused", arguments: StoreBackend.available)
    func revokedIntegrationRefusesWrites(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        // Revocation deletes pending challenges, and the store issues none for a revoked
        // integration; write the rows that a challenge issued during the revocation's commit can
        // leave, so that the transactions get past the challenge to the integration check.
        _ = try world.store.revokeIntegration(clientID: "clid_contract", at: Self.time, audit: nil)
        try world.location.insertChallengeRow(
            id: [UInt8](repeating: 2, count: 32), clientID: "clid_contract", createdAt: Self.time, expiresAt: Self.time + 60)
        let registration = try world.store.registerDevice(
            world.device(2), firstToken: world.token(2, keySeed: 2), consumingChallenge: [UInt8](repeating: 2, count: 32), at: Self.time)
        #expect(registration == .integrationRevoked)
        try world.location.insertChallengeRow(
            id: [UInt8](repeating: 3, count: 32), clientID: "clid_contract", createdAt: Self.time, expiresAt: Self.time + 60)
        let refresh = try world.store.advanceCounter(
            keyID: world.device(1).keyID, from: 0, to: 1, at: Self.time, token: world.token(3, keySeed: 1),
            consumingChallenge: [UInt8](repeating: 3, count: 32), keepingLatest: nil)
        #expect(refresh == .integrationRevoked)
        #expect(try world.store.activeToken(hash: world.token(3, keySeed: 1).tokenHash, at: Self.time) == nil)
    }

    @Test(
        "the counter advances by compare-and-set; a stale counter, a blocked device and a used challenge mint nothing",
        arguments: StoreBackend.available)
    func counterAdvance(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        let keyID = world.device(1).keyID
        let first = try world.store.advanceCounter(
            keyID: keyID, from: 0, to: 5, at: Self.time + 1, token: world.token(10, keySeed: 1),
            consumingChallenge: try world.challenge(10), keepingLatest: nil)
        #expect(first == .advanced)
        #expect(try world.store.device(keyID: keyID)?.counter == 5)
        let stale = try world.store.advanceCounter(
            keyID: keyID, from: 0, to: 6, at: Self.time + 2, token: world.token(11, keySeed: 1),
            consumingChallenge: try world.challenge(11), keepingLatest: nil)
        #expect(stale == .counterChanged)
        #expect(try world.store.activeToken(hash: world.token(11, keySeed: 1).tokenHash, at: Self.time) == nil)
        let used = try world.store.advanceCounter(
            keyID: keyID, from: 5, to: 6, at: Self.time + 3, token: world.token(12, keySeed: 1),
            consumingChallenge: [UInt8](repeating: 10, count: 32), keepingLatest: nil)
        #expect(used == .challengeUsed)
        let unknown = try world.store.advanceCounter(
            keyID: [UInt8](repeating: 99, count: 32), from: 0, to: 1, at: Self.time + 3, token: world.token(13, keySeed: 99),
            consumingChallenge: try world.challenge(13), keepingLatest: nil)
        #expect(unknown == .deviceBlocked)
        #expect(try world.store.device(keyID: keyID)?.counter == 5)
    }

    @Test(
        "a refresh's three reads together answer what each read alone does, a missing row as nil",
        arguments: StoreBackend.available)
    func refreshInputs(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        let keyID = world.device(1).keyID
        let receipt = ReceiptState(
            verdict: .valid, type: .receipt, createdAt: Self.time, expiresAt: nil, riskMetric: 3, refreshedAt: Self.time + 9)
        try world.store.updateReceipt(keyID: keyID, receipt: [9, 8, 7], state: receipt)
        let challengeID = try world.challenge(2)
        let unknown = [UInt8](repeating: 77, count: 32)
        let spent = [UInt8](repeating: 1, count: 32)  // consumed by the registration of key 1
        for (clientID, challenge, key) in [
            (world.integration.clientID, challengeID, keyID), (world.integration.clientID, spent, keyID),
            ("clid_missing", challengeID, keyID), (world.integration.clientID, unknown, keyID),
            (world.integration.clientID, challengeID, unknown),
            ("clid_missing", unknown, unknown),
        ] {
            let together = try world.store.refreshInputs(clientID: clientID, challengeID: challenge, keyID: key)
            let apart = RefreshInputs(
                integration: try world.store.integration(clientID: clientID), challenge: try world.store.challenge(id: challenge),
                device: try world.store.device(keyID: key))
            #expect(together == apart)
        }
        let found = try world.store.refreshInputs(clientID: world.integration.clientID, challengeID: challengeID, keyID: keyID)
        #expect(found.integration == world.integration)
        #expect(found.challenge == ChallengeState(clientID: world.integration.clientID, expiresAt: Self.time + 300, consumed: false))
        #expect(found.device?.receiptState == receipt)
        #expect(found.device?.receipt == [9, 8, 7])
        #expect(
            try world.store.refreshInputs(clientID: world.integration.clientID, challengeID: spent, keyID: keyID).challenge?.consumed
                == true)
    }

    @Test(
        "challenges issued at the same time on two nodes are each stored once, for their own integration", arguments: StoreBackend.available
    )
    func concurrentChallenges(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.store.insertIntegration(World.integration("clid_other"), audit: nil)
        let nodes = [world.store, try world.otherNode()]
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 40) { index in
            do {
                let stored = try nodes[index % 2].insertChallenge(
                    id: [UInt8](repeating: UInt8(index), count: 32), clientID: index % 3 == 0 ? "clid_other" : world.integration.clientID,
                    createdAt: Self.time, expiresAt: Self.time + Int64(index) + 1)
                if !stored { failures.withLock { $0 += 1 } }
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        for index in 0..<40 {
            let stored = try world.store.challenge(id: [UInt8](repeating: UInt8(index), count: 32))
            #expect(
                stored
                    == ChallengeState(
                        clientID: index % 3 == 0 ? "clid_other" : world.integration.clientID, expiresAt: Self.time + Int64(index) + 1,
                        consumed: false))
        }
    }

    // MARK: Tokens and housekeeping

    @Test("an expired token is not active, and purge removes expired tokens and challenges only", arguments: StoreBackend.available)
    func expiryAndPurge(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        try world.challenge(2, expiresIn: 10)
        let hash = world.token(1, keySeed: 1).tokenHash
        #expect(try world.store.activeToken(hash: hash, at: Self.time + 3599) != nil)
        #expect(try world.store.activeToken(hash: hash, at: Self.time + 3600) == nil)
        // Challenge 1 (300 s) and 2 (10 s) expire before the token (3600 s).
        #expect(try world.store.purgeExpired(at: Self.time + 300) == 2)
        #expect(try world.store.purgeExpired(at: Self.time + 3600) == 1)
        #expect(try world.store.statistics().counts == [1, 1, 0])
        #expect(try world.store.statistics().bytes > 0)
        try world.store.checkAvailable()
    }

    @Test("the purge goes on batch after batch until none is left, and keeps what has not expired", arguments: StoreBackend.available)
    func purgeInBatches(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let store = try #require(world.store as? any SQLTokenStore)
        for seed in UInt8(1)...8 { try world.challenge(seed, expiresIn: Int64(seed) * 10) }
        try world.challenge(9, expiresIn: 1000)
        // Batches of 3, 3 and 2: the last is not full, and ends the purge.
        #expect(try store.purgeExpired(at: Self.time + 80, batch: 3) == 8)
        #expect(try world.store.challenge(id: [UInt8](repeating: 8, count: 32)) == nil)
        #expect(try world.store.challenge(id: [UInt8](repeating: 9, count: 32)) != nil)
        #expect(try store.purgeExpired(at: Self.time + 80, batch: 3) == 0)
    }

    // MARK: Two nodes on one database

    @Test("a challenge issued through one node is redeemed exactly once across nodes", arguments: StoreBackend.available)
    func crossNodeChallenge(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let other = try world.otherNode()
        let id = try world.challenge(1)
        #expect(try other.challenge(id: id)?.consumed == false)
        #expect(try other.consumeChallenge(id: id, at: Self.time))
        #expect(try !world.store.consumeChallenge(id: id, at: Self.time))
    }

    @Test("a revocation through one node stops the other node's next lookup", arguments: StoreBackend.available)
    func crossNodeRevocation(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let other = try world.otherNode()
        try world.register(1)
        let hash = world.token(1, keySeed: 1).tokenHash
        #expect(try other.activeToken(hash: hash, at: Self.time) != nil)
        _ = try world.store.revokeIntegration(clientID: "clid_contract", at: Self.time, audit: nil)
        #expect(try other.activeToken(hash: hash, at: Self.time) == nil)
    }

    @Test("racing nodes: one challenge, many registrations: exactly one registers", arguments: StoreBackend.available)
    func racingRegistrations(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let nodes = [world.store, try world.otherNode(), try world.otherNode()]
        let id = try world.challenge(1)
        let outcomes = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 12) { index in
            let store = nodes[index % nodes.count]
            let seed = UInt8(20 + index)
            let outcome: String
            do {
                outcome =
                    "\(try store.registerDevice(world.device(seed), firstToken: world.token(seed, keySeed: seed), consumingChallenge: id, at: Self.time))"
            } catch {
                outcome = "error \(error)"
            }
            outcomes.withLock { $0.append(outcome) }
        }
        let all = outcomes.withLock { $0 }
        #expect(all.filter { $0 == "registered" }.count == 1, "\(all)")
        #expect(all.filter { $0 == "challengeUsed" }.count == 11, "\(all)")
    }

    @Test("racing nodes: one counter value, many refreshes with fresh challenges: exactly one advances", arguments: StoreBackend.available)
    func racingRefreshes(_ backend: StoreBackend) throws {
        let world = try World(backend)
        try world.register(1)
        let nodes = [world.store, try world.otherNode(), try world.otherNode()]
        let challenges = try (0..<12).map { try world.challenge(UInt8(40 + $0)) }
        let outcomes = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 12) { index in
            let store = nodes[index % nodes.count]
            let outcome: String
            do {
                outcome =
                    "\(try store.advanceCounter(keyID: world.device(1).keyID, from: 0, to: 1, at: Self.time, token: world.token(UInt8(60 + index), keySeed: 1), consumingChallenge: challenges[index], keepingLatest: nil))"
            } catch {
                outcome = "error \(error)"
            }
            outcomes.withLock { $0.append(outcome) }
        }
        let all = outcomes.withLock { $0 }
        #expect(all.filter { $0 == "advanced" }.count == 1, "\(all)")
        #expect(all.filter { $0 == "counterChanged" }.count == 11, "\(all)")
        #expect(try world.store.device(keyID: world.device(1).keyID)?.counter == 1)
    }

    @Test("a revocation racing registrations leaves no active device or token behind", arguments: StoreBackend.available)
    func revocationRacingRegistrations(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let nodes = [world.store, try world.otherNode()]
        let challenges = try (0..<10).map { try world.challenge(UInt8(100 + $0)) }
        DispatchQueue.concurrentPerform(iterations: 11) { index in
            if index == 10 {
                _ = try? nodes[1].revokeIntegration(clientID: "clid_contract", at: Self.time, audit: nil)
            } else {
                let seed = UInt8(100 + index)
                _ = try? nodes[index % 2].registerDevice(
                    world.device(seed), firstToken: world.token(seed, keySeed: seed), consumingChallenge: challenges[index], at: Self.time)
            }
        }
        #expect(try world.store.statistics().counts == [0, 0, 1])
        for index in 0..<10 {
            #expect(try world.store.activeToken(hash: world.token(UInt8(100 + index), keySeed: 0).tokenHash, at: Self.time) == nil)
        }
    }
}

extension StoreStatistics {
    /// Active integrations, active devices, revoked integrations.
    fileprivate var counts: [Int] { [activeIntegrations, activeDevices, revokedIntegrations] }
}

extension TokenStoreContractTests {
    @Test(
        "a cap of new keys holds under concurrent registrations: counted inside the registering transaction (decision 0021)",
        arguments: StoreBackend.available)
    func newKeyCapUnderConcurrency(_ backend: StoreBackend) throws {
        let world = try World(backend)
        let stores = try (0..<4).map { _ in try world.otherNode() }
        let challenges = try (UInt8(100)..<116).map { try world.challenge($0) }
        let outcomes = Mutex<[RegistrationOutcome]>([])
        DispatchQueue.concurrentPerform(iterations: challenges.count) { index in
            let seed = UInt8(100 + index)
            let outcome = try? stores[index % stores.count].registerDevice(
                world.device(seed), firstToken: world.token(seed, keySeed: seed), consumingChallenge: challenges[index], at: Self.time,
                newKeyCap: NewKeyCap(maximum: 5, since: Self.time - 3600))
            outcomes.withLock { $0.append(outcome ?? .challengeUsed) }
        }
        let all = outcomes.withLock { $0 }
        #expect(all.filter { $0 == .registered }.count == 5)
        #expect(all.filter { $0 == .newKeyCapReached }.count == 11)
        #expect(try world.store.newKeyCount(clientID: world.integration.clientID, since: 0) == 5)
    }
}
