public import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// How the clients that share one stored key take turns: every client whose key store has the
/// same `name` (in this process) and, when `lockFile` is set, every process that locks that file,
/// runs its attestation or refresh alone and first reads the store again. So two clients of one
/// install (two view models, an app and its extension) never attest two keys, and never replace
/// the key another one just attested or refreshed with.
public struct KeyCoordination: Sendable, Hashable {
    /// What names the stored key within this process.
    public let name: String
    /// A file that processes sharing the key lock (`flock`), e.g. in a shared app-group
    /// container; nil: clients of this process only.
    public let lockFile: URL?

    public init(name: String, lockFile: URL? = nil) {
        self.name = name
        self.lockFile = lockFile
    }
}

/// One turn, held from `acquire` until `release`.
struct KeyTurn: Sendable {
    let name: String
    let descriptor: Int32?

    /// Waits for the turn of `coordination`, this process's and then the lock file's, polling every
    /// 20 ms: never past `deadline` (monotonic; nil: no limit), and no longer once the calling
    /// task is cancelled. A client whose turn never comes (another one stopped in a debugger, or
    /// stuck in DeviceCheck) ends its call in time instead of hanging.
    static func acquire(_ coordination: KeyCoordination, deadline: TimeInterval?, clock: any MonotonicClock) async throws -> KeyTurn {
        while !ProcessTurns.shared.tryAcquire(coordination.name) { try await pause(until: deadline, clock: clock) }
        guard let lockFile = coordination.lockFile else { return KeyTurn(name: coordination.name, descriptor: nil) }
        do {
            return KeyTurn(name: coordination.name, descriptor: try await lock(lockFile, deadline: deadline, clock: clock))
        } catch {
            ProcessTurns.shared.release(coordination.name)
            throw error
        }
    }

    func release() {
        if let descriptor {
            _ = flock(descriptor, LOCK_UN)
            _ = close(descriptor)
        }
        ProcessTurns.shared.release(name)
    }

    private static func pause(until deadline: TimeInterval?, clock: any MonotonicClock) async throws {
        if let deadline, clock.now() >= deadline {
            throw AttestClientError.transport("another client of this App Attest key did not finish within this call's retry budget")
        }
        try await clock.sleep(0.02)
    }

    /// An exclusive `flock` on `file`, taken without blocking (`LOCK_NB`) and tried again.
    private static func lock(_ file: URL, deadline: TimeInterval?, clock: any MonotonicClock) async throws -> Int32 {
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let descriptor = open(file.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw FileKeyIDStore.Failure(description: "cannot open the lock file \(file.path)") }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                _ = close(descriptor)
                throw FileKeyIDStore.Failure(description: "cannot lock \(file.path)")
            }
            do {
                try await pause(until: deadline, clock: clock)
            } catch {
                _ = close(descriptor)
                throw error
            }
        }
        return descriptor
    }
}

/// This process's turns, by coordination name.
private final class ProcessTurns: @unchecked Sendable {
    // @unchecked: `taken` is read and written only while holding `lock`.
    static let shared = ProcessTurns()
    private let lock = NSLock()
    private var taken: Set<String> = []

    /// Takes the turn of `name` when it is free.
    func tryAcquire(_ name: String) -> Bool { lock.withLock { taken.insert(name).inserted } }

    func release(_ name: String) { _ = lock.withLock { taken.remove(name) } }
}
