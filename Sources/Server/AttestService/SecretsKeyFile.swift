import AttestCrypto
import Foundation

/// The key that seals secrets attestd keeps in its database (integrations' DeviceCheck keys): 32
/// random bytes written as 64 hex digits in a file (`openssl rand -hex 32`), read by attestd
/// (`--secrets-key-file`) and by `attestctl integration set-fraud-key`.
///
/// Why a file and not the database: a copy of the database (a backup, a replica) then holds only
/// sealed keys, useless without this file.
package struct SecretsKeyFile: Sendable {
    /// Why the file was refused (its contents are never quoted).
    package struct FileError: Error, CustomStringConvertible {
        package let description: String
    }

    /// The file the key came from.
    package let path: String
    /// The 32 key bytes.
    package let key: [UInt8]
    /// True when group or other users may read the file (a warning: chmod 600 it).
    package let readableByOthers: Bool

    /// Reads `path`: exactly 64 hex digits, surrounding whitespace ignored.
    package init(path: String) throws(FileError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw FileError(description: "the secrets key file \(path) does not exist (make one with: openssl rand -hex 32 > FILE)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FileError(description: "the secrets key file \(path) exists but cannot be read by this user (check its owner and mode)")
        }
        try self.init(path: path, contents: Array(data))
    }

    /// Parses `contents` as read from `path` (tests pass the bytes directly).
    package init(path: String, contents: [UInt8]) throws(FileError) {
        let text = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.count == SealedBox.keyLength * 2, let key = Hex.decode(text), key.count == SealedBox.keyLength else {
            throw FileError(
                description: "the secrets key file \(path) must hold exactly \(SealedBox.keyLength * 2) hex digits (openssl rand -hex 32)")
        }
        self.path = path
        self.key = key
        let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
        readableByOthers = mode.map { $0 & 0o077 != 0 } ?? false
    }
}

/// What a DeviceCheck key is sealed to: the integration and the key ID, so that a sealed key
/// copied into another integration's row (or relabelled with another key ID) does not open.
package enum FraudKeySealing {
    /// The associated data for `clientID`'s key `keyID`.
    package static func associatedData(clientID: String, keyID: String) -> [UInt8] {
        Array("attestd fraud key v1\u{0}\(clientID)\u{0}\(keyID)".utf8)
    }
}
