import Synchronization

/// Client IDs this node has read as active, so that a challenge for one of them costs one store
/// statement (the insert, which checks the integration itself) rather than a read and an insert.
///
/// A hint, never an authority: the store's insert refuses a revoked or suspended integration, and
/// the ID is then forgotten here. What the hint stands in for is the rule that only a client ID
/// that exists reaches the rate limiter, whose per-integration buckets are never dropped: an ID
/// gets here only from a read that found it, and integrations are never deleted. Bounded: past
/// `capacity` IDs new ones are not remembered, and take the read first as before.
final class ActiveIntegrationHints: Sendable {
    private let ids = Mutex(Set<String>())
    /// The most IDs remembered.
    let capacity: Int

    /// Remembers at most `capacity` IDs (default 10,000: well under a megabyte).
    init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
    }

    func contains(_ clientID: String) -> Bool {
        ids.withLock { $0.contains(clientID) }
    }

    /// Remembers `clientID`, which a read has just found active (unless the table is full).
    func remember(_ clientID: String) {
        ids.withLock { ids in
            if ids.count < capacity { ids.insert(clientID) }
        }
    }

    /// Forgets `clientID`, which the store found not active.
    func forget(_ clientID: String) {
        _ = ids.withLock { $0.remove(clientID) }
    }

    /// How many IDs are remembered (tests).
    var count: Int { ids.withLock { $0.count } }
}
