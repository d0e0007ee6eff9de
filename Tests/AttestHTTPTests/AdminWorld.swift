import AttestCore
import AttestCrypto
import AttestHTTPServer
import AttestServer
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// An `HTTPWorld` with admin keys: the admin API called through the admin router (no socket),
/// the device API over loopback to attest devices whose tokens and keys the tests act on.
final class AdminWorld {
    let world: HTTPWorld
    /// The workspace of `world.integration`.
    static let workspace = "ws_http"
    static let otherWorkspace = "ws_other"
    static let keyNumber = Atomic<Int>(0)

    init(
        listening: Bool = false, clock: any WallClock = SystemWallClock(), configure: (inout ServerConfiguration) -> Void = { _ in }
    ) throws {
        world = try HTTPWorld(listening: listening, clock: clock, configure: configure)
    }

    var admin: WorkspaceAdmin { world.app.workspaceAdmin }

    /// A new key's secret.
    func key(_ role: AdminRole, workspace: String = AdminWorld.workspace, name: String? = nil) throws -> String {
        // A live key's name is unique in its workspace: unnamed keys get a number each.
        let name = name ?? "\(role.rawValue) key \(AdminWorld.keyNumber.add(1, ordering: .relaxed).newValue)"
        return try admin.issueKey(workspaceID: workspace, role: role, name: name, actor: "setup (test)").secret
    }

    /// An integration in `workspace`, made as attestctl would.
    func integration(workspace: String = AdminWorld.workspace, name: String = "Fresh") throws -> IntegrationRecord {
        try world.admin.create(
            workspaceID: workspace, name: name, teamID: "ABCDE12345", bundleIDs: ["com.example.messages"], environments: [.production])
    }

    /// Attests a new synthetic device on `world.integration`: its key ID (hex) and first token.
    func device() throws -> (keyID: String, token: String) {
        let device = try SyntheticDevice()
        let client = try world.client()
        return (Hex.encode(device.keyID), try world.attest(client, device: device))
    }

    /// An admin API call with `Authorization: Bearer key` (or other headers), through the admin router.
    func call(
        _ method: String, _ path: String, key: String? = nil, json: String? = nil, headers: [HTTPHeader] = [],
        remoteAddress: String = "127.0.0.1"
    ) -> HTTPResponse {
        var all = headers
        if let key { all.append(HTTPHeader(name: "Authorization", value: "Bearer \(key)")) }
        if json != nil { all.append(HTTPHeader(name: "Content-Type", value: "application/json")) }
        return world.app.adminRouter.respond(
            to: HTTPRequest(method: method, target: path, headers: all, body: Array((json ?? "").utf8), remoteAddress: remoteAddress))
    }

    static func body(_ response: HTTPResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    static func code(_ response: HTTPResponse) -> String? { body(response)["code"] as? String }

    static func header(_ response: HTTPResponse, _ name: String) -> String? {
        response.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Whether `token` still passes `/v1/authorize`.
    func authorizes(_ token: String) throws -> Bool {
        try world.authorize(try world.client(), token: token).status == 200
    }
}

/// Runs `body` on a thread of its own, in the calling test's task (so its expectations are the
/// test's), without holding a thread of Swift's cooperative pool: the pool has one thread per
/// core, these tests block on sockets and the database, and the client library's async tests
/// (AttestClientTests) need a pool thread to go on while they run in the same process.
func offThePool(_ body: @escaping @Sendable () throws -> Void) async throws {
    try await withTaskExecutorPreference(ThreadPerJob.shared) { try body() }
}

/// A task executor that runs each job on a new thread (tests only: a few jobs per test).
final class ThreadPerJob: TaskExecutor {
    static let shared = ThreadPerJob()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        Thread { job.runSynchronously(on: executor) }.start()
    }
}
