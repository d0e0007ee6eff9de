import AttestStorage
import Dispatch
import Synchronization

@testable import AttestService

/// A store that runs a test's hook just before each durable write of a device request (a key's
/// registration, a counter's advance) and forwards everything to `base`: how race tests put two
/// requests, or an administrator's change, between the checks and the write of a request.
final class HookedStore: ServiceStore {
    enum Write: Sendable { case register, advance }

    let base: any ServiceStore
    private let hook: @Sendable (Write) -> Void

    init(_ base: any ServiceStore, beforeWrite hook: @escaping @Sendable (Write) -> Void) {
        self.base = base
        self.hook = hook
    }

    func registerDevice(
        _ device: DeviceRecord, firstToken: TokenRecord, consumingChallenge challengeID: [UInt8], at time: Int64, newKeyCap: NewKeyCap?
    ) throws(StorageError) -> RegistrationOutcome {
        hook(.register)
        return try base.registerDevice(device, firstToken: firstToken, consumingChallenge: challengeID, at: time, newKeyCap: newKeyCap)
    }

    func advanceCounter(
        keyID: [UInt8], from previous: UInt32, to counter: UInt32, at time: Int64, token: TokenRecord,
        consumingChallenge challengeID: [UInt8], keepingLatest: Int?
    ) throws(StorageError) -> CounterAdvance {
        hook(.advance)
        return try base.advanceCounter(
            keyID: keyID, from: previous, to: counter, at: time, token: token, consumingChallenge: challengeID, keepingLatest: keepingLatest
        )
    }

    // Forwarded as they are.
    func insertChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool {
        try base.insertChallenge(id: id, clientID: clientID, createdAt: createdAt, expiresAt: expiresAt)
    }
    func replaceChallenge(id: [UInt8], clientID: String, createdAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool {
        try base.replaceChallenge(id: id, clientID: clientID, createdAt: createdAt, expiresAt: expiresAt)
    }
    func challenge(id: [UInt8]) throws(StorageError) -> ChallengeState? { try base.challenge(id: id) }
    func consumeChallenge(id: [UInt8], at time: Int64) throws(StorageError) -> Bool { try base.consumeChallenge(id: id, at: time) }
    func integration(clientID: String) throws(StorageError) -> IntegrationRecord? { try base.integration(clientID: clientID) }
    func device(keyID: [UInt8]) throws(StorageError) -> DeviceRecord? { try base.device(keyID: keyID) }
    func refreshInputs(clientID: String, challengeID: [UInt8], keyID: [UInt8]) throws(StorageError) -> RefreshInputs {
        try base.refreshInputs(clientID: clientID, challengeID: challengeID, keyID: keyID)
    }
    func newKeyCount(clientID: String, since: Int64) throws(StorageError) -> Int { try base.newKeyCount(clientID: clientID, since: since) }
    func takeSharedToken(bucket: String, perSecond: Double, burst: Double, at now: Double) throws(StorageError) -> Int? {
        try base.takeSharedToken(bucket: bucket, perSecond: perSecond, burst: burst, at: now)
    }
    func activeToken(hash: [UInt8], at time: Int64) throws(StorageError) -> TokenRecord? { try base.activeToken(hash: hash, at: time) }
    func activeToken(hash: [UInt8], at time: Int64, then reply: @escaping @Sendable (Result<TokenRecord?, StorageError>) -> Void) {
        base.activeToken(hash: hash, at: time, then: reply)
    }
    func revokeToken(hash: [UInt8], audit: AuditNote<Bool>?) throws(StorageError) -> Bool { try base.revokeToken(hash: hash, audit: audit) }
    func insertDebugToken(_ token: DebugTokenRecord, liveLimit: Int, audit: AuditNote<Void>?) throws(StorageError) -> DebugTokenInsert {
        try base.insertDebugToken(token, liveLimit: liveLimit, audit: audit)
    }
    func debugTokens(clientID: String) throws(StorageError) -> [DebugTokenRecord] { try base.debugTokens(clientID: clientID) }
    func debugToken(id: String) throws(StorageError) -> DebugTokenRecord? { try base.debugToken(id: id) }
    func debugToken(secretHash: [UInt8]) throws(StorageError) -> DebugTokenRecord? { try base.debugToken(secretHash: secretHash) }
    func revokeDebugToken(id: String, at time: Int64, audit: AuditNote<DebugTokenRevocation>?) throws(StorageError)
        -> DebugTokenRevocation?
    {
        try base.revokeDebugToken(id: id, at: time, audit: audit)
    }
    func mintForDebugToken(_ token: TokenRecord, at time: Int64) throws(StorageError) -> DebugTokenMint {
        try base.mintForDebugToken(token, at: time)
    }
    func purgeExpired(at time: Int64) throws(StorageError) -> Int { try base.purgeExpired(at: time) }
    func statistics() throws(StorageError) -> StoreStatistics { try base.statistics() }
    func snapshot(at time: Int64) throws(StorageError) -> StoreSnapshot { try base.snapshot(at: time) }
    func backup(to path: String) throws(StorageError) { try base.backup(to: path) }
    func restore(_ snapshot: StoreSnapshot) throws(StorageError) { try base.restore(snapshot) }
    func close() throws(StorageError) { try base.close() }
    func checkIntegrity() throws(StorageError) { try base.checkIntegrity() }
    func checkAvailable() throws(StorageError) { try base.checkAvailable() }
    var poolStatistics: PoolStatistics? { base.poolStatistics }
    func databaseTime() throws(StorageError) -> Double? { try base.databaseTime() }
    func recordedTime() throws(StorageError) -> RecordedTime? { try base.recordedTime() }
}

/// Holds the first `parties` callers of `arrive` until all of them have arrived (a bounded
/// wait: a test that never brings the others fails instead of hanging); later callers pass.
final class Barrier: Sendable {
    private let parties: Int
    private let arrived = Mutex(0)
    private let released = DispatchSemaphore(value: 0)

    init(parties: Int) { self.parties = parties }

    func arrive() {
        let count = arrived.withLock { count -> Int in
            count += 1
            return count
        }
        guard count <= parties else { return }
        if count == parties {
            for _ in 1..<parties { released.signal() }
        } else {
            _ = released.wait(timeout: .now() + .seconds(10))
        }
    }
}
