import AttestCrypto
import Foundation
import Synchronization

/// The credentials `/v1/introspect` and `/v1/revoke` callers present, read from one file (one per
/// line) and re-read on SIGHUP, so that a gateway secret can be rotated without an outage: add the
/// new one, reload, switch the gateways, remove the old one, reload.
package final class GatewaySecrets: Sendable {
    /// Why a secrets file was refused (nothing changes then).
    package struct FileError: Error, CustomStringConvertible {
        package let description: String
    }

    /// One file's secrets, never changed once read.
    private final class Secrets: Sendable {
        let values: [[UInt8]]
        init(_ values: [[UInt8]]) { self.values = values }
    }

    /// The file the secrets come from.
    package let file: String
    /// The secrets in force, read by every introspection and revocation without a lock.
    ///
    /// Why not a lock: every gateway check takes it, and a lock here made the workers queue
    /// (docs/BENCHMARKS.md). A reload publishes a new `Secrets`; the ones it replaced stay in
    /// `published`, so a check that loaded one a moment before still reads live memory. They are a
    /// few hundred bytes per reload (SIGHUP).
    private let current: Atomic<Unmanaged<Secrets>>
    /// Every `Secrets` published, kept alive for as long as this object.
    private let published: Mutex<[Secrets]>

    /// Reads `file`; throws when it is missing, unreadable or holds no valid secret.
    package init(file: String) throws(FileError) {
        self.file = file
        let first = Secrets(try Self.read(file))
        published = Mutex([first])
        current = Atomic(Unmanaged.passUnretained(first))
    }

    /// How many secrets are accepted now.
    package var count: Int { inForce.values.count }

    /// The secrets published last.
    private var inForce: Secrets { current.load(ordering: .acquiring).takeUnretainedValue() }

    /// Re-reads the file; on any error the secrets in force stay as they were. Returns how many now.
    @discardableResult
    package func reload() throws(FileError) -> Int {
        let fresh = Secrets(try Self.read(file))
        published.withLock { published in
            published.append(fresh)
            current.store(Unmanaged.passUnretained(fresh), ordering: .releasing)
        }
        return fresh.values.count
    }

    /// Whether `presented` is one of the secrets. Every secret is compared, in constant time each,
    /// so the answer's timing says nothing about which one (or how much of one) matched.
    package func accepts(_ presented: String) -> Bool {
        let bytes = Array(presented.utf8)
        return inForce.values.reduce(false) { found, secret in ConstantTime.equals(bytes, secret) || found }
    }

    /// The non-empty, non-comment lines of `file`, each at least 16 characters.
    static func read(_ file: String) throws(FileError) -> [[UInt8]] {
        guard FileManager.default.fileExists(atPath: file) else {
            throw FileError(description: "the gateway secret file \(file) does not exist")
        }
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw FileError(
                description: "the gateway secret file \(file) exists but cannot be read by this user (check its owner and mode)")
        }
        let numbered = text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            .map { (number: $0.offset + 1, text: $0.element.trimmingCharacters(in: .whitespacesAndNewlines)) }
            .filter { !$0.text.isEmpty && !$0.text.hasPrefix("#") }
        guard !numbered.isEmpty else { throw FileError(description: "the gateway secret file \(file) holds no secret") }
        if let short = numbered.first(where: { $0.text.utf8.count < 16 }) {
            // The line's number, never its text: it is a secret, or part of one.
            throw FileError(description: "\(file) line \(short.number): a gateway secret must be at least 16 characters")
        }
        let lines = numbered.map(\.text)
        return lines.map { Array($0.utf8) }
    }
}
