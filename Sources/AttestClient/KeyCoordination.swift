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

    /// Waits for the turn of `coordination`: this process's first, then the lock file's.
    static func acquire(_ coordination: KeyCoordination) async throws -> KeyTurn {
        await ProcessTurns.shared.acquire(coordination.name)
        guard let lockFile = coordination.lockFile else { return KeyTurn(name: coordination.name, descriptor: nil) }
        do {
            return KeyTurn(name: coordination.name, descriptor: try await lock(lockFile))
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

    /// An exclusive `flock` on `file`, waited for on a thread of its own (never on one of Swift's
    /// cooperative threads).
    private static func lock(_ file: URL) async throws -> Int32 {
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let descriptor = open(file.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw FileKeyIDStore.Failure(description: "cannot open the lock file \(file.path)") }
        let locked: Bool = await withCheckedContinuation { continuation in
            Thread {
                var result = flock(descriptor, LOCK_EX)
                while result != 0 && errno == EINTR { result = flock(descriptor, LOCK_EX) }
                continuation.resume(returning: result == 0)
            }.start()
        }
        guard locked else {
            _ = close(descriptor)
            throw FileKeyIDStore.Failure(description: "cannot lock \(file.path)")
        }
        return descriptor
    }
}

/// This process's turns, by coordination name: first come, first served.
private final class ProcessTurns: @unchecked Sendable {
    // @unchecked: `waiting` is read and written only while holding `lock`.
    static let shared = ProcessTurns()
    private let lock = NSLock()
    /// A name is taken while it has an entry; its value is who waits, in order.
    private var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]

    func acquire(_ name: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let taken = lock.withLock { () -> Bool in
                if waiting[name] != nil {
                    waiting[name]?.append(continuation)
                    return false
                }
                waiting[name] = []
                return true
            }
            if taken { continuation.resume() }
        }
    }

    func release(_ name: String) {
        let next = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            guard var queue = waiting[name] else { return nil }
            guard !queue.isEmpty else {
                waiting[name] = nil
                return nil
            }
            let first = queue.removeFirst()
            waiting[name] = queue
            return first
        }
        next?.resume()
    }
}
