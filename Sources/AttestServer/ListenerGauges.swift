import AttestHTTPServer
import Synchronization

/// The device-facing listener's saturation, for `/metrics`: the router (which serves the scrape)
/// is made before the server that listens for it, so `Server` attaches the server once it runs.
package final class ListenerGauges: Sendable {
    private let server = Mutex<HTTPServer?>(nil)

    package init() {}

    func attach(_ http: HTTPServer) { server.withLock { $0 = http } }

    /// Connections waiting for a deferred answer (authorize and introspect lookups) now; 0 before attach.
    var parkedConnections: Int { server.withLock { $0?.parkedConnectionCount ?? 0 } }

    /// The connection limit in force; 0 before attach.
    var connectionLimit: Int { server.withLock { $0.map { Int($0.connectionLimit) } ?? 0 } }
}
