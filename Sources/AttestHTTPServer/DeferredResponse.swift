internal import CMicroHTTPD
import Synchronization

/// An answer a responder gives later, from any thread (`HTTPResponder.respond(to:answer:)`).
///
/// Until it comes, the server parks the connection (libmicrohttpd's suspend) and its worker goes
/// on serving other connections; `complete` wakes the connection (resume), and the worker then
/// builds the response with the given closure and sends it. An answer given before the worker
/// could park the connection is sent at once. Only the first `complete` counts: `HTTPServer.stop`
/// answers a connection still parked when it gives up waiting with 503, and a later answer from
/// the responder is then dropped.
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

    /// Gives the answer; `finish` builds the response on the connection's worker thread. Only
    /// the first call counts.
    package func complete(_ finish: @escaping Finish) {
        state.withLock { state in
            guard state.phase != .answered else { return }
            let wasParked = state.phase == .parked
            state.phase = .answered
            state.finish = finish
            if wasParked {
                parkedConnections.remove(self)
                MHD_resume_connection(connection)
            }
        }
    }

    /// On the worker, once the responder has returned: the answer's builder when it is already
    /// there, or nil after suspending the connection until `complete`.
    func parkUnlessAnswered() -> Finish? {
        state.withLock { state -> Finish? in
            guard state.phase == .open else { return state.finish }
            state.phase = .parked
            parkedConnections.insert(self)
            MHD_suspend_connection(connection)
            return nil
        }
    }

    /// On the worker, after the connection was resumed: the answer's builder.
    func answer() -> Finish? { state.withLock { $0.finish } }
}

/// The connections parked for a deferred answer, so that `HTTPServer.stop` can answer the ones
/// still waiting: libmicrohttpd aborts the process when it is stopped with one suspended.
final class ParkedConnections: Sendable {
    private let parked = Mutex<[ObjectIdentifier: DeferredResponse]>([:])

    func insert(_ response: DeferredResponse) { parked.withLock { $0[ObjectIdentifier(response)] = response } }
    func remove(_ response: DeferredResponse) { _ = parked.withLock { $0.removeValue(forKey: ObjectIdentifier(response)) } }

    var count: Int { parked.withLock { $0.count } }

    /// Answers every connection still parked with `response` (they are resumed, then sent it).
    func answerAll(_ response: HTTPResponse) {
        for waiting in parked.withLock({ Array($0.values) }) { waiting.complete { response } }
    }
}
