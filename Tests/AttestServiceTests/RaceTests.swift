import AttestCore
import AttestCrypto
import AttestStorage
import AttestTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AttestService

/// What happens between a request's checks and its write: another request, or an
/// administrator. Threads and a store hook (`HookedStore`) put them there.
@Suite("Races between a request's checks and its write")
struct RaceTests {
    /// A service over `world`'s store with `hook` before each durable write.
    static func service(_ world: ServiceWorld, observer: RecordingObserver? = nil, hook: @escaping @Sendable (HookedStore.Write) -> Void)
        throws -> TokenService
    {
        TokenService(
            store: HookedStore(world.store, beforeWrite: hook), verifier: try AttestationVerifier(anchor: world.pki.anchor),
            clock: world.clock, observer: observer)
    }

    /// Refreshes with each of `requests` on threads of their own at once; their outcomes, in order.
    static func concurrently(_ service: TokenService, refreshing requests: [RefreshRequest]) -> [Result<IssuedToken, ServiceError>] {
        let outcomes = Mutex([Result<IssuedToken, ServiceError>?](repeating: nil, count: requests.count))
        DispatchQueue.concurrentPerform(iterations: requests.count) { index in
            let outcome: Result<IssuedToken, ServiceError>
            do throws(ServiceError) {
                outcome = .success(try service.refresh(requests[index], from: "127.0.0.1"))
            } catch {
                outcome = .failure(error)
            }
            outcomes.withLock { $0[index] = outcome }
        }
        return outcomes.withLock { $0.compactMap { $0 } }
    }

    @Test("an integration suspended between the checks and the registration: refused, the challenge spent, no device written")
    func suspendedBeforeTheWrite() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let admin = world.admin
        let clientID = world.integration.clientID
        let service = try Self.service(world) { write in
            if write == .register { _ = try? admin.setSuspended(clientID: clientID, true) }
        }
        let device = try SyntheticDevice()
        let request = try world.attestRequest(device)
        #expect(serviceError { try service.attest(request, from: "127.0.0.1") }?.code == .integrationSuspended)
        #expect(try world.store.device(keyID: device.keyID) == nil)
        #expect(try world.store.challenge(id: request.challenge.storedID)?.consumed == true)
    }

    @Test("the shared attest bucket empty: the next verified attestation is refused before it registers, and its challenge is spent")
    func attestBucketEmpty() throws {
        var policy = ServicePolicy()
        policy.attestPerIntegration = RateLimit(perSecond: 0.001, burst: 1)
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        _ = try world.service.attest(try world.attestRequest(try SyntheticDevice()), from: "127.0.0.1")
        let second = try SyntheticDevice()
        let refused = try world.attestRequest(second)
        #expect(serviceError { try world.service.attest(refused, from: "127.0.0.1") }?.code == .rateLimited)
        #expect(try world.store.device(keyID: second.keyID) == nil)
        #expect(try world.store.challenge(id: refused.challenge.storedID)?.consumed == true)
    }

    @Test("two refreshes with one counter, both checked before either writes: one wins, the other is refused and mints nothing")
    func refreshesRace() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let observer = RecordingObserver()
        let barrier = Barrier(parties: 2)
        let service = try Self.service(world, observer: observer) { write in
            if write == .advance { barrier.arrive() }
        }
        var device = try SyntheticDevice()
        _ = try service.attest(try world.attestRequest(device), from: "127.0.0.1")
        let requests = [try world.refreshRequest(&device, counter: 5), try world.refreshRequest(&device, counter: 5)]
        let outcomes = Self.concurrently(service, refreshing: requests)
        let tokens = outcomes.compactMap { try? $0.get() }
        let refusals = outcomes.compactMap { outcome -> ServiceError? in
            guard case .failure(let error) = outcome else { return nil }
            return error
        }
        #expect(tokens.count == 1)
        #expect(refusals == [ServiceError(.assertionRejected, .check(.counterNotIncreasing), "")])
        #expect(try world.service.introspect(tokens[0].accessToken) != nil)
        #expect(try world.store.device(keyID: device.keyID)?.counter == 5)
        // Each request reported once, after its write: the winner's success and the loser's check.
        let clientID = world.integration.clientID
        let counterCheck = ServiceError.Subcode.check(.counterNotIncreasing).identifier
        #expect(
            Set(observer.reports.withLock { $0 }.dropFirst(2)) == [
                "assertion ok \(clientID)", "token", "assertion \(counterCheck) \(clientID)",
            ])
    }
}

/// Every report the service makes, in order.
final class RecordingObserver: ServiceObserver {
    let reports = Mutex<[String]>([])
    func receiptVerified(clientID: String, verdict: String, riskMetric: Int?) {}
    func verificationFinished(_ kind: VerificationKind, outcome: String, clientID: String?) {
        reports.withLock { $0.append("\(kind.rawValue) \(outcome) \(clientID ?? "-")") }
    }
    func tokenIssued(debug: Bool) { reports.withLock { $0.append(debug ? "debug token" : "token") } }
    func debugTokenExchanged(outcome: String, clientID: String?) { reports.withLock { $0.append("debug exchange \(outcome)") } }
}

extension RaceTests {
    @Test("each request is reported once: a verified one after its write, a refused one by the check that refused it")
    func reportedOnce() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let observer = RecordingObserver()
        let service = try Self.service(world, observer: observer) { _ in }
        let clientID = world.integration.clientID
        let device = try SyntheticDevice()
        _ = try service.attest(try world.attestRequest(device), from: "127.0.0.1")
        #expect(observer.reports.withLock { $0 } == ["attestation ok \(clientID)", "token"])

        var broken = try world.attestRequest(try SyntheticDevice())
        broken.keyID = try #require(KeyID(device.keyID))  // another key's ID: the nonce and key ID checks fail
        #expect(serviceError { try service.attest(broken, from: "127.0.0.1") }?.code == .attestationRejected)
        let afterRefusal = observer.reports.withLock { $0 }
        #expect(afterRefusal.count == 3 && afterRefusal[2].hasPrefix("attestation ") && !afterRefusal[2].hasPrefix("attestation ok"))
        #expect(try world.store.challenge(id: broken.challenge.storedID)?.consumed == true)

        // A field the route could not decode: the challenge is spent and the refusal counted, without the integration.
        let malformed = try world.attestRequest(try SyntheticDevice())
        let error = ServiceError.malformed(.check(.keyIDLength), "key_id must decode to 32 bytes")
        #expect(serviceError { try service.refuse(error, presenting: malformed.challenge, as: .attestation) } == error)
        #expect(try world.store.challenge(id: malformed.challenge.storedID)?.consumed == true)
        #expect(observer.reports.withLock { $0.last } == "attestation \(error.subcode.identifier) -")
    }
}
