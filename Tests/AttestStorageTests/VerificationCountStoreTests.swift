import AttestStorage
import AttestTesting
import Testing

/// `verification_counts` on both stores: every flush adds to its rows, a read sums them into hour
/// or day buckets of one integration from a time on, and the purge keeps 31 days.
@Suite("Verification count store")
struct VerificationCountStoreTests {
    static let hour: Int64 = 1_800_000_000 - 1_800_000_000 % 86_400 + 5 * 3600

    static func count(_ start: Int64, _ kind: VerificationCount.Kind, _ outcome: String, _ n: Int64, client: String = "clid_a")
        -> VerificationCount
    {
        VerificationCount(clientID: client, start: start, kind: kind, outcome: outcome, count: n)
    }

    @Test(
        "flushes add to the same rows; reads sum them per hour or per day, one integration's, from a time on",
        arguments: StoreBackend.available)
    func addAndSum(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.hour)
        let hour = Self.hour
        try store.addVerificationCounts([
            Self.count(hour, .attestation, "ok", 2), Self.count(hour, .attestation, "attestation_nonce", 1),
            Self.count(hour + 3600, .assertion, "ok", 5), Self.count(hour, .attestation, "ok", 9, client: "clid_b"),
        ])
        // A second node's flush of the same hour adds to its rows.
        try store.addVerificationCounts([Self.count(hour, .attestation, "ok", 3), Self.count(hour - 86_400, .debug, "ok", 4)])
        let hourly = try store.verificationCounts(clientID: "clid_a", since: hour, bucket: 3600)
        #expect(
            hourly == [
                Self.count(hour, .attestation, "attestation_nonce", 1), Self.count(hour, .attestation, "ok", 5),
                Self.count(hour + 3600, .assertion, "ok", 5),
            ])
        let daily = try store.verificationCounts(clientID: "clid_a", since: hour - 86_400, bucket: 86_400)
        let day = hour - hour % 86_400
        #expect(
            daily
                == [
                    Self.count(day - 86_400, .debug, "ok", 4), Self.count(day, .assertion, "ok", 5),
                    Self.count(day, .attestation, "attestation_nonce", 1), Self.count(day, .attestation, "ok", 5),
                ].sorted { ($0.start, $0.kind.rawValue, $0.outcome) < ($1.start, $1.kind.rawValue, $1.outcome) })
        withExtendedLifetime(location) {}
    }

    @Test("the purge deletes hours older than 31 days and keeps the rest", arguments: StoreBackend.available)
    func purge(_ backend: StoreBackend) throws {
        let location = try TestStoreLocation(backend)
        let store = try location.open(at: Self.hour)
        let old = Self.hour - VerificationCount.retention - 3600
        try store.addVerificationCounts([Self.count(old, .attestation, "ok", 1), Self.count(Self.hour - 3600, .attestation, "ok", 1)])
        _ = try store.purgeExpired(at: Self.hour)
        let left = try store.verificationCounts(clientID: "clid_a", since: 0, bucket: 3600)
        #expect(left.map(\.start) == [Self.hour - 3600])
        withExtendedLifetime(location) {}
    }
}
