#if canImport(Security)
    import Foundation
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

        public init(service: String = "AttestClient", account: String = "app-attest-key-id", accessGroup: String? = nil) {
            self.service = service
            self.account = account
            self.accessGroup = accessGroup
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

        public func load() throws -> String? {
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

        public func save(_ keyID: String) throws {
            let data = Data(keyID.utf8)
            let updated = SecItemUpdate(query as CFDictionary, [kSecValueData as String: data] as CFDictionary)
            if updated == errSecSuccess { return }
            guard updated == errSecItemNotFound else { throw Failure(status: updated) }
            var item = query
            item[kSecValueData as String] = data
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let added = SecItemAdd(item as CFDictionary, nil)
            guard added == errSecSuccess else { throw Failure(status: added) }
        }

        public func remove() throws {
            let status = SecItemDelete(query as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw Failure(status: status) }
        }
    }
#endif
