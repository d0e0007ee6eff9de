internal import CMicroHTTPD
import Synchronization

/// An answer a responder gives later, from any thread (`HTTPResponder.respond(to:answer:)`).
///
/// Until it comes, the server parks the connection (libmicrohttpd's suspend) and its worker goes
/// on serving other connections; `complete` wakes the connection (resume), and the worker then
/// builds the response with the given closure and sends it. An answer given before the worker
/// could park the connection is sent at once. Only the first `complete` counts: `HTTPServer.stop`
/// answers a connection still parked when it gives up waiting with 503, and a later answer from
/// the responder is then dropped. Once the server is stopping nothing new parks: an answer that
/// has not come when the worker would park is 503 at once (`ParkedConnections.close`), unless the
/// connection was registered before its work started (`reserve`).
package final class DeferredResponse: Sendable {
    /// Builds the response on the connection's worker thread.
    package typealias Finish = @Sendable () -> HTTPResponse

    private enum Phase {
        /// The responder has the request; the worker has not parked the connection yet.
        case open
        /// The connection is suspended until `complete`.
        case parked
        /// `finish` is set: the response can be built.
        case answered
    }

    private struct State {
        var phase = Phase.open
        var finish: Finish?
        /// Registered with the parked connections before its work started (`reserve`).
        var reserved = false
    }

    private let state = Mutex(State())
    // nonisolated(unsafe): libmicrohttpd's handle, used only for MHD_suspend_connection (on the
    // connection's worker) and MHD_resume_connection (thread-safe), both under `state`'s lock.
    private nonisolated(unsafe) let connection: OpaquePointer
    private let parkedConnections: ParkedConnections

    init(connection: OpaquePointer, parkedConnections: ParkedConnections) {
        self.connection = connection
        self.parkedConnections = parkedConnections
    }

    /// The answer to a request the server will not start because it is stopping (503,
    /// `Retry-After: 1`: it may be retried elsewhere).
    package static var stopping: HTTPResponse { ParkedConnections.stopping }

    /// Before work whose answer must be the work's own starts (a durable write: a 503 sent
    /// while it commits would tell its client the wrong thing): registers the connection with the
    /// parked ones, so that a stop that begins meanwhile waits for this answer (within its drain)
    /// instead of refusing it. False, registering nothing, once the server is stopping: then
    /// start nothing and answer `stopping`.
    package func reserve() -> Bool {
        state.withLock { state in
            guard state.phase == .open else { return false }
            if state.reserved { return true }
            guard parkedConnections.insert(self) else { return false }
            state.reserved = true
            return true
        }
    }

    /// Gives the answer; `finish` builds the response on the connection's worker thread. Only
    /// the first call counts.
    package func complete(_ finish: @escaping Finish) {
        state.withLock { state in
            guard state.phase != .answered else { return }
            let wasParked = state.phase == .parked
            state.phase = .answered
            state.finish = finish
            if wasParked || state.reserved { parkedConnections.remove(self) }
            if wasParked { MHD_resume_connection(connection) }
        }
    }

    /// On the worker, once the responder has returned: the answer's builder when it is already
    /// there, or nil after suspending the connection until `complete`.
    func parkUnlessAnswered() -> Finish? {
        state.withLock { state -> Finish? in
            guard state.phase == .open else { return state.finish }
            // Why: libmicrohttpd aborts the process when it is stopped with a connection
            // suspended, so once `stop` has begun a request that would park is answered now,
            // unless it was registered before its work started (`reserve`): `stop` answers it.
            guard state.reserved || parkedConnections.insert(self) else {
                state.phase = .answered
                state.finish = { ParkedConnections.stopping }
                return state.finish
            }
            state.phase = .parked
            MHD_suspend_connection(connection)
            return nil
        }
    }

    /// On the worker, after the connection was resumed: the answer's builder.
    func answer() -> Finish? { state.withLock { $0.finish } }
}

/// The connections parked for a deferred answer, so that `HTTPServer.stop` can answer the ones
/// still waiting: libmicrohttpd aborts the process when it is stopped with one suspended. Once
/// closed (the server is stopping) it takes no more, so the set only shrinks until it is empty.
final class ParkedConnections: Sendable {
    private struct State {
        var parked: [ObjectIdentifier: DeferredResponse] = [:]
        var closed = false
    }

    private let state = Mutex(State())

    /// The answer to a request that finds the server stopping, or is still waiting when it stops:
    /// it may be retried elsewhere.
    static let stopping = HTTPResponse(status: 503, headers: [HTTPHeader(name: "Retry-After", value: "1")], body: [])

    /// Registers a parked connection; false, registering nothing, once closed.
    func insert(_ response: DeferredResponse) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.parked[ObjectIdentifier(response)] = response
            return true
        }
    }

    func remove(_ response: DeferredResponse) { _ = state.withLock { $0.parked.removeValue(forKey: ObjectIdentifier(response)) } }

    var count: Int { state.withLock { $0.parked.count } }

    /// Takes no more connections from now on (the server is stopping).
    func close() { state.withLock { $0.closed = true } }

    /// Answers every connection still parked with `stopping` (they are resumed, then sent it).
    func answerAll() {
        for waiting in state.withLock({ Array($0.parked.values) }) { waiting.complete { Self.stopping } }
    }
}
