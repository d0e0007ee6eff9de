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

    /// The file the secrets come from.
    package let file: String
    private let secrets: Mutex<[[UInt8]]>

    /// Reads `file`; throws when it is missing, unreadable or holds no valid secret.
    package init(file: String) throws(FileError) {
        self.file = file
        secrets = Mutex(try Self.read(file))
    }

    /// How many secrets are accepted now.
    package var count: Int { secrets.withLock { $0.count } }

    /// Re-reads the file; on any error the secrets in force stay as they were. Returns how many now.
    @discardableResult
    package func reload() throws(FileError) -> Int {
        let fresh = try Self.read(file)
        secrets.withLock { $0 = fresh }
        return fresh.count
    }

    /// Whether `presented` is one of the secrets. Every secret is compared, in constant time each,
    /// so the answer's timing says nothing about which one (or how much of one) matched.
    package func accepts(_ presented: String) -> Bool {
        let bytes = Array(presented.utf8)
        return secrets.withLock { secrets in secrets.reduce(false) { found, secret in ConstantTime.equals(bytes, secret) || found } }
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
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        guard !lines.isEmpty else { throw FileError(description: "the gateway secret file \(file) holds no secret") }
        guard lines.allSatisfy({ $0.utf8.count >= 16 }) else {
            throw FileError(description: "every gateway secret in \(file) must be at least 16 characters")
        }
        return lines.map { Array($0.utf8) }
    }
}
