public import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// Where the client keeps its App Attest key ID between launches. The key itself never leaves the
/// Secure Enclave; the ID is how the app finds it again, and keeping it is what makes a restarted
/// app refresh by assertion instead of attesting a new key. The client saves a new key's ID
/// before attesting it, so a crash between the two leaves the key to be attested at the next
/// launch rather than forgotten.
public protocol KeyIDStore: Sendable {
    /// The saved key ID, or nil when none is saved.
    func load() throws -> String?
    /// Saves `keyID`, replacing any saved one.
    func save(_ keyID: String) throws
    /// Forgets the saved key ID (nothing saved is not an error).
    func remove() throws
    /// The last access token kept for `scope` (the client ID and attestd's URL it came from), so
    /// that a relaunch needs no round trip while it is fresh; nil when none is kept, or the kept
    /// one is another scope's (an app switching between staging and production never sends one's
    /// token to the other). Only a store that keeps secrets safely keeps one (the Keychain); the
    /// default keeps none.
    func loadToken(scope: String) throws -> AccessToken?
    /// Keeps `token` for `scope`, replacing any kept one (nil forgets it).
    func saveToken(_ token: AccessToken?, scope: String) throws
    /// How the clients sharing this store's key take turns (`KeyCoordination`). The default: the
    /// clients of this process whose stores are of the same type.
    var coordination: KeyCoordination { get }
}

extension KeyIDStore {
    /// Keeps no token.
    public func loadToken(scope: String) throws -> AccessToken? { nil }
    /// Keeps no token.
    public func saveToken(_ token: AccessToken?, scope: String) throws {}
    /// The clients of this process whose stores are of this type take turns.
    public var coordination: KeyCoordination { KeyCoordination(name: String(reflecting: Self.self)) }
}

/// A key ID in one file: the key ID's base64 text and nothing else, written atomically (a new
/// file with mode 0600, flushed, then renamed over the old one). For Linux, tests and command-line
/// tools; on Apple platforms prefer `KeychainKeyIDStore`, whose item is never restored onto
/// another device (an App Attest key cannot move with a backup).
public struct FileKeyIDStore: KeyIDStore {
    /// The file.
    public let url: URL

    /// The store in `url`; its directory is made (mode 0700) on the first save.
    public init(url: URL) {
        self.url = url
    }

    /// Every client of this file, in any process, takes turns on `<file>.lock` beside it.
    public var coordination: KeyCoordination {
        KeyCoordination(name: "file:" + url.standardizedFileURL.path, lockFile: url.appendingPathExtension("lock"))
    }

    /// Why the file could not be read or written.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    public func load() throws -> String? {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            if !FileManager.default.fileExists(atPath: url.path) { return nil }
            throw Failure(description: "cannot read \(url.path)")
        }
        // A damaged file is an error, not "no key": reading it as none would attest a new key at
        // every launch while the old one stays registered.
        guard let text = String(data: data, encoding: .utf8), Data(base64Encoded: text) != nil, !text.isEmpty else {
            throw Failure(description: "\(url.path) does not hold a key ID")
        }
        return text
    }

    public func save(_ keyID: String) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Failure(description: "cannot create \(temporary.path)") }
        let bytes = Array(keyID.utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let flushed = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, flushed, rename(temporary.path, url.path) == 0 else {
            unlink(temporary.path)
            throw Failure(description: "cannot write \(url.path)")
        }
    }

    public func remove() throws {
        guard unlink(url.path) == 0 || errno == ENOENT else { throw Failure(description: "cannot remove \(url.path)") }
    }
}
