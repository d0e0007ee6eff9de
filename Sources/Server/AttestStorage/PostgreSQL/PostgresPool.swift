import Dispatch
import Synchronization

/// A fixed number of PostgreSQL connections, each used by one caller at a time.
///
/// Connections are opened lazily and replaced when broken, so attestd starts serving again by
/// itself once the server is back. A caller that finds its connection dead gets `unavailable`
/// at once, and the next checkout reconnects. No call hangs: libpq's `connect_timeout` bounds a
/// connection attempt, and each connection's answer timeout every statement, also when the
/// server stops answering without closing anything.
///
/// Once the server has failed (a connection attempt that failed, or a statement whose answer
/// timed out), connecting is paced: at most one attempt at a time, and none within
/// `reconnectPause` of the last failure; a caller that needs a new connection meanwhile gets
/// `unavailable` at once. After a timed-out answer the idle connections are dropped too. Why:
/// every HTTP worker serves its connections one request at a time, so requests that each waited
/// out a timeout on a silent server would queue behind one another for far longer than one
/// timeout (decision 0015); this way only the requests under way when it fell silent wait.
final class PostgresPool: Sendable {
    /// A slot's connection, moved between threads by the pool.
    ///
    /// `@unchecked Sendable`: a slot is in `idle` or held by exactly one caller between `checkout`
    /// and `checkin`, so no two threads touch its connection at once.
    final class Slot: @unchecked Sendable {
        var connection: PostgresConnection?
    }

    /// Whether connecting is paced after a failure.
    private struct Health {
        /// When the server last failed; nil while it answers.
        var failedAt: ContinuousClock.Instant?
        /// Whether a connection attempt after a failure is under way.
        var probing = false
    }

    let settings: PostgresSettings
    private let idle: Mutex<[Slot]>
    private let available: DispatchSemaphore
    private let health = Mutex(Health())
    /// No connection attempt within this long of the server's last failure.
    static let reconnectPause = Duration.seconds(1)

    init(settings: PostgresSettings) {
        self.settings = settings
        let size = max(1, settings.poolSize)
        idle = Mutex((0..<size).map { _ in Slot() })
        available = DispatchSemaphore(value: size)
    }

    /// Runs `body` on a healthy connection, connecting first when the slot has none.
    ///
    /// When a kept connection turns out dead at the first statement `body` sends (a server restart
    /// while it sat idle), nothing has reached the server, so `body` runs once more on a new
    /// connection: the first request after a restart succeeds. A failure after that is returned,
    /// and so is a statement whose answer timed out (it may have reached the server and run).
    func withConnection<T>(_ body: (PostgresConnection) throws(StorageError) -> T) throws(StorageError) -> T {
        let deadline = DispatchTime.now() + .milliseconds(settings.checkoutTimeoutMilliseconds)
        waiting.add(1, ordering: .relaxed)
        let waited = available.wait(timeout: deadline)
        waiting.subtract(1, ordering: .relaxed)
        guard waited == .success else {
            throw .busy("no free PostgreSQL connection within \(settings.checkoutTimeoutMilliseconds) ms")
        }
        let slot = idle.withLock { $0.removeLast() }
        defer {
            idle.withLock { $0.append(slot) }
            available.signal()
        }
        let reused = slot.connection != nil
        let connection = try connection(in: slot)
        let before = connection.statementsSent
        do {
            return try body(connection)
        } catch  where error.code == .unavailable && reused && connection.statementsSent == before + 1 && !connection.abandoned {
            slot.connection = nil
            let fresh = try self.connection(in: slot)
            do {
                return try body(fresh)
            } catch {
                if !fresh.isHealthy { slot.connection = nil }
                if fresh.abandoned { serverFailed(dropIdle: true) }
                throw error
            }
        } catch {
            if !connection.isHealthy { slot.connection = nil }
            if connection.abandoned { serverFailed(dropIdle: true) }
            throw error
        }
    }

    /// Requests waiting for a connection right now.
    private let waiting = Atomic<Int>(0)

    /// The pool's size, the connections lent out and the requests waiting for one, now.
    var statistics: PoolStatistics {
        let size = max(1, settings.poolSize)
        return PoolStatistics(size: size, inUse: size - idle.withLock { $0.count }, waiting: waiting.load(ordering: .relaxed))
    }

    /// Drops every idle connection (tests that restart the server use it to start clean).
    func closeIdleConnections() {
        idle.withLock { slots in slots.forEach { $0.connection = nil } }
    }

    private func connection(in slot: Slot) throws(StorageError) -> PostgresConnection {
        if let connection = slot.connection, connection.isHealthy { return connection }
        slot.connection = nil
        try beginConnecting()
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection(settings)
        } catch {
            if error.code == .unavailable {
                serverFailed(dropIdle: false)
            } else {
                health.withLock { $0.probing = false }
            }
            throw error
        }
        health.withLock { $0 = Health() }
        slot.connection = connection
        return connection
    }

    /// Refuses at once to connect while the server failed less than `reconnectPause` ago or
    /// another attempt after its failure is under way; otherwise lets this attempt go ahead.
    private func beginConnecting() throws(StorageError) {
        let now = ContinuousClock.now
        let refusal = health.withLock { health -> String? in
            guard let failedAt = health.failedAt else { return nil }
            if health.probing { return "another connection attempt is under way after PostgreSQL failed" }
            if now - failedAt < Self.reconnectPause {
                return "PostgreSQL failed less than \(Self.reconnectPause) ago; connections are tried again once a second"
            }
            health.probing = true
            return nil
        }
        if let refusal { throw .unavailable(refusal) }
    }

    /// Records a failure of the server; after a timed-out answer also drops the idle connections,
    /// which would most likely each wait out the same timeout.
    private func serverFailed(dropIdle: Bool) {
        health.withLock { $0 = Health(failedAt: .now, probing: false) }
        if dropIdle { closeIdleConnections() }
    }
}
