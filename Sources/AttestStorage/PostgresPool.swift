import Dispatch
import Synchronization

/// A fixed number of PostgreSQL connections, each used by one caller at a time.
///
/// Connections are opened lazily and replaced when broken, so attestd starts serving again by
/// itself once the server is back. A caller that finds its connection dead gets `unavailable`
/// at once (never a hang: libpq's `connect_timeout` and the server's `statement_timeout` bound
/// every call), and the next checkout reconnects.
final class PostgresPool: Sendable {
    /// A slot's connection, moved between threads by the pool.
    ///
    /// `@unchecked Sendable`: a slot is in `idle` or held by exactly one caller between `checkout`
    /// and `checkin`, so no two threads touch its connection at once.
    final class Slot: @unchecked Sendable {
        var connection: PostgresConnection?
    }

    let settings: PostgresSettings
    private let idle: Mutex<[Slot]>
    private let available: DispatchSemaphore

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
    /// connection: the first request after a restart succeeds. A failure after that is returned.
    func withConnection<T>(_ body: (PostgresConnection) throws(StorageError) -> T) throws(StorageError) -> T {
        let deadline = DispatchTime.now() + .milliseconds(settings.checkoutTimeoutMilliseconds)
        guard available.wait(timeout: deadline) == .success else {
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
        } catch  where error.code == .unavailable && reused && connection.statementsSent == before + 1 {
            slot.connection = nil
            let fresh = try self.connection(in: slot)
            do {
                return try body(fresh)
            } catch {
                if !fresh.isHealthy { slot.connection = nil }
                throw error
            }
        } catch {
            if !connection.isHealthy { slot.connection = nil }
            throw error
        }
    }

    /// Drops every idle connection (tests that restart the server use it to start clean).
    func closeIdleConnections() {
        idle.withLock { slots in slots.forEach { $0.connection = nil } }
    }

    private func connection(in slot: Slot) throws(StorageError) -> PostgresConnection {
        if let connection = slot.connection, connection.isHealthy { return connection }
        slot.connection = nil
        let connection = try PostgresConnection(settings)
        slot.connection = connection
        return connection
    }
}
