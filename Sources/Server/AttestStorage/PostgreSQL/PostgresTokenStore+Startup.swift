import Foundation
import Synchronization

/// What a store opened while its server was unreachable reports as it comes up.
package enum StoreStartupEvent: Sendable {
    /// The server did not answer; the store retries and answers `unavailable` meanwhile.
    case waiting(StorageError)
    /// The migrations ran: the store serves.
    case ready
    /// The server answered but the database cannot be used by this binary (a migration it does
    /// not know, a failed migration): the store stops retrying and keeps answering `unavailable`.
    case refused(StorageError)
}

/// Whether a PostgreSQL store has applied its migrations, and the thread that retries them
/// while the server does not answer. A node started during a database outage runs, answers 503
/// (readiness too) and becomes ready by itself, instead of exiting for systemd to give up on it.
final class MigrationGate: Sendable {
    private struct State {
        var stopping = false
        var refusal: StorageError?
    }

    private let state = Mutex(State())
    /// Whether the migrations ran: read without a lock by every request (waiting for `state`'s lock
    /// showed in a gateway check's profile on PostgreSQL, docs/BENCHMARKS.md).
    private let isOpen = Atomic<Bool>(true)
    private let wake = DispatchSemaphore(value: 0)

    /// Throws `unavailable` until the migrations ran.
    func require() throws(StorageError) {
        if isOpen.load(ordering: .acquiring) { return }
        throw state.withLock { $0.refusal }
            ?? .unavailable("the database has not answered since attestd started; it retries every few seconds")
    }

    /// Closes the gate and retries `migrate` every `interval` on a thread of its own until it
    /// succeeds, fails for a reason other than `unavailable`, or `stop` is called.
    func retry(
        every interval: Duration, _ migrate: @escaping @Sendable () throws(StorageError) -> Void,
        events: @escaping @Sendable (StoreStartupEvent) -> Void
    ) {
        isOpen.store(false, ordering: .releasing)
        let thread = Thread { [self] in
            while !state.withLock({ $0.stopping }) {
                _ = wake.wait(timeout: .now() + .milliseconds(Int(interval.components.seconds * 1000)))
                if state.withLock({ $0.stopping }) { return }
                do throws(StorageError) {
                    try migrate()
                    isOpen.store(true, ordering: .releasing)
                    events(.ready)
                    return
                } catch  where error.code == .unavailable {
                    continue
                } catch {
                    state.withLock { $0.refusal = .unavailable("the database cannot be used: \(error.reason)") }
                    events(.refused(error))
                    return
                }
            }
        }
        thread.name = "attestd-migration-retry"
        thread.start()
    }

    /// Stops the retries (a clean stop).
    func stop() {
        state.withLock { $0.stopping = true }
        wake.signal()
    }
}

extension PostgresTokenStore {
    /// Opens the store and applies the migrations; when the server does not answer, returns the
    /// store anyway, answering `unavailable` until a retry every `retryEvery` has migrated it
    /// (attestd: a node started during a database outage comes up by itself). Other failures
    /// (an unknown migration, a malformed URI) are thrown at once. The store keeps token answers
    /// in memory under its answer lease (`keepAnswers`).
    package static func opening(
        settings: PostgresSettings, now: @escaping @Sendable () -> Int64, report: MigrationReport? = nil,
        retryEvery: Duration = .seconds(2), events: @escaping @Sendable (StoreStartupEvent) -> Void
    ) throws(StorageError) -> PostgresTokenStore {
        let store = PostgresTokenStore(unconnected: settings)
        do {
            try store.migrate(at: now(), report: report)
        } catch  where error.code == .unavailable {
            events(.waiting(error))
            store.gate.retry(every: retryEvery, { () throws(StorageError) in try store.migrate(at: now(), report: report) }, events: events)
        }
        store.keepAnswers()
        return store
    }
}
