import AttestHTTPServer
import Synchronization

/// The device-facing listener's saturation, for `/metrics`: the router (which serves the scrape)
/// is made before the server that listens for it, so `Server` attaches the server once it runs.
package final class ListenerGauges: Sendable {
    /// Weak: the listener's router holds these gauges (`/metrics` reads them), and the listener
    /// holds its router; a strong reference back would be a cycle, and a stopped listener, with
    /// the store behind its routes and the store's open files, would never be freed.
    private struct Attached {
        weak var server: HTTPServer?
    }
    private let attached = Mutex(Attached())

    package init() {}

    func attach(_ http: HTTPServer) { attached.withLock { $0.server = http } }

    /// Connections waiting for a deferred answer (authorize and introspect lookups) now; 0 before attach.
    var parkedConnections: Int { attached.withLock { $0.server?.parkedConnectionCount ?? 0 } }

    /// The connection limit in force; 0 before attach.
    var connectionLimit: Int { attached.withLock { $0.server.map { Int($0.connectionLimit) } ?? 0 } }
}
