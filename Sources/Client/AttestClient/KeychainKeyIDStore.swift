#if canImport(Security)
    public import Foundation
    import Security

    /// The key ID as a generic-password item in the app's Keychain (Apple platforms only).
    ///
    /// The item is `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`: readable by a background
    /// launch once the device has been unlocked, and never in a backup restored onto another
    /// device, because an App Attest key lives in this device's Secure Enclave and means nothing
    /// elsewhere. Keychain items can outlive the app's deletion, so a reinstalled app finds its
    /// key, and a blocked device stays blocked.
    public struct KeychainKeyIDStore: KeyIDStore {
        public let service: String
        public let account: String
        /// A Keychain access group shared with app extensions, or nil for the app's own.
        public let accessGroup: String?
        /// A file every process sharing the item locks while it attests or refreshes (in the
        /// app group's container, for an app and its extensions), or nil: this process's clients
        /// take turns, other processes do not (`KeyCoordination`).
        public let lockFile: URL?

        public init(
            service: String = "AttestClient", account: String = "app-attest-key-id", accessGroup: String? = nil, lockFile: URL? = nil
        ) {
            self.service = service
            self.account = account
            self.accessGroup = accessGroup
            self.lockFile = lockFile
        }

        public var coordination: KeyCoordination {
            KeyCoordination(name: "keychain:\(service)/\(account)/\(accessGroup ?? "")", lockFile: lockFile)
        }

        /// A Keychain call that failed, with its `OSStatus` (e.g. -25308 `errSecInteractionNotAllowed`
        /// before the first unlock).
        public struct Failure: Error, Sendable, Equatable {
            public let status: Int32
        }

        private var query: [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account,
            ]
            if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        public func load() throws -> String? { try Self.read(query) }

        public func save(_ keyID: String) throws { try Self.write(keyID, query) }

        /// The text of the item `query` names; nil when there is none.
        private static func read(_ query: [String: Any]) throws -> String? {
            var search = query
            search[kSecReturnData as String] = true
            search[kSecMatchLimit as String] = kSecMatchLimitOne
            var item: CFTypeRef?
            let status = SecItemCopyMatching(search as CFDictionary, &item)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = item as? Data, let text = String(data: data, encoding: .utf8) else {
                throw Failure(status: status)
            }
            return text
        }

        /// Writes `text` into the item `query` names, made this device only and readable after the
        /// first unlock.
        private static func write(_ text: String, _ query: [String: Any]) throws {
            let data = Data(text.utf8)
            let updated = SecItemUpdate(query as CFDictionary, [kSecValueData as String: data] as CFDictionary)
            if updated == errSecSuccess { return }
            guard updated == errSecItemNotFound else { throw Failure(status: updated) }
            var item = query
            item[kSecValueData as String] = data
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let added = SecItemAdd(item as CFDictionary, nil)
            guard added == errSecSuccess else { throw Failure(status: added) }
        }

        /// The kept access token: a second item of the same service and group (account
        /// `<account>.access-token`), as protected as the key ID's, holding its scope too.
        public func loadToken(scope: String) throws -> AccessToken? {
            guard let text = try Self.read(tokenQuery) else { return nil }
            let parts = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, parts[0] == scope, let seconds = TimeInterval(parts[2]) else { return nil }
            return AccessToken(value: parts[1], expiresAt: Date(timeIntervalSince1970: seconds))
        }

        public func saveToken(_ token: AccessToken?, scope: String) throws {
            guard let token else {
                let status = SecItemDelete(tokenQuery as CFDictionary)
                guard status == errSecSuccess || status == errSecItemNotFound else { throw Failure(status: status) }
                return
            }
            try Self.write("\(scope)\n\(token.value)\n\(token.expiresAt.timeIntervalSince1970)", tokenQuery)
        }

        private var tokenQuery: [String: Any] {
            var query = self.query
            query[kSecAttrAccount as String] = account + ".access-token"
            return query
        }

        public func remove() throws {
            let status = SecItemDelete(query as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw Failure(status: status) }
        }
    }
#endif
