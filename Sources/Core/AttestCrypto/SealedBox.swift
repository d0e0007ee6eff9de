internal import COpenSSL

/// AES-256-GCM sealing for secrets attestd keeps at rest (integrations' DeviceCheck keys).
///
/// A sealed box is `nonce (12) || ciphertext || tag (16)`. The nonce is random per seal: with a
/// 96-bit random nonce one key may seal billions of values before a collision is a concern, far
/// beyond one key per integration. `associatedData` binds the box to where it is stored (an
/// integration's client ID and key ID), so a box copied into another row does not open.
package enum SealedBox {
    /// The key length: 32 bytes (AES-256).
    package static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16

    /// Encrypts and authenticates `plaintext` under `key` (32 bytes).
    package static func seal(_ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        guard key.count == keyLength else { throw CryptoError(.invalidSealingKey, "a sealing key is \(keyLength) bytes") }
        let nonce = try SecureRandom.bytes(nonceLength)
        let context = try CipherContext()
        guard EVP_EncryptInit_ex(context.handle, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(context.handle, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceLength), nil) == 1,
            EVP_EncryptInit_ex(context.handle, nil, nil, key, nonce) == 1
        else { throw OpenSSLErrorQueue.error(.internalFailure, "EVP_EncryptInit_ex (AES-256-GCM)") }
        try context.update(associatedData: associatedData, encrypting: true)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var length: Int32 = 0
        if !plaintext.isEmpty {
            guard EVP_EncryptUpdate(context.handle, &ciphertext, &length, plaintext, Int32(plaintext.count)) == 1 else {
                throw OpenSSLErrorQueue.error(.internalFailure, "EVP_EncryptUpdate")
            }
        }
        var total = Int(length)
        guard
            (ciphertext.withUnsafeMutableBufferPointer {
                EVP_EncryptFinal_ex(context.handle, $0.baseAddress.map { base in base + total }, &length)
            }) == 1
        else { throw OpenSSLErrorQueue.error(.internalFailure, "EVP_EncryptFinal_ex") }
        total += Int(length)
        var tag = [UInt8](repeating: 0, count: tagLength)
        guard EVP_CIPHER_CTX_ctrl(context.handle, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), &tag) == 1 else {
            throw OpenSSLErrorQueue.error(.internalFailure, "EVP_CTRL_GCM_GET_TAG")
        }
        return nonce + ciphertext.prefix(total) + tag
    }

    /// Decrypts a box made by `seal` with the same key and associated data; `sealedBoxRefused` when
    /// the key is wrong or any byte (of the box or the associated data) changed.
    package static func open(_ box: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        guard key.count == keyLength else { throw CryptoError(.invalidSealingKey, "a sealing key is \(keyLength) bytes") }
        guard box.count >= nonceLength + tagLength else { throw CryptoError(.sealedBoxRefused, "the sealed box is too short") }
        let nonce = Array(box.prefix(nonceLength))
        let ciphertext = Array(box.dropFirst(nonceLength).dropLast(tagLength))
        var tag = Array(box.suffix(tagLength))
        let context = try CipherContext()
        guard EVP_DecryptInit_ex(context.handle, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(context.handle, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceLength), nil) == 1,
            EVP_DecryptInit_ex(context.handle, nil, nil, key, nonce) == 1
        else { throw OpenSSLErrorQueue.error(.internalFailure, "EVP_DecryptInit_ex (AES-256-GCM)") }
        try context.update(associatedData: associatedData, encrypting: false)
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var length: Int32 = 0
        if !ciphertext.isEmpty {
            guard EVP_DecryptUpdate(context.handle, &plaintext, &length, ciphertext, Int32(ciphertext.count)) == 1 else {
                throw OpenSSLErrorQueue.error(.internalFailure, "EVP_DecryptUpdate")
            }
        }
        var total = Int(length)
        guard EVP_CIPHER_CTX_ctrl(context.handle, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1 else {
            throw OpenSSLErrorQueue.error(.internalFailure, "EVP_CTRL_GCM_SET_TAG")
        }
        // Why the plaintext is dropped on failure: GCM releases decrypted bytes before the tag is
        // checked; nothing of an unauthenticated box may leave this function.
        guard
            (plaintext.withUnsafeMutableBufferPointer {
                EVP_DecryptFinal_ex(context.handle, $0.baseAddress.map { base in base + total }, &length)
            }) == 1
        else {
            _ = OpenSSLErrorQueue.drain()
            throw CryptoError(.sealedBoxRefused, "the sealed box does not open with this key (wrong key, or altered)")
        }
        total += Int(length)
        return Array(plaintext.prefix(total))
    }
}

/// One owner per `EVP_CIPHER_CTX`, freed in `deinit`.
private final class CipherContext {
    let handle: OpaquePointer

    init() throws(CryptoError) {
        guard let handle = EVP_CIPHER_CTX_new() else { throw OpenSSLErrorQueue.error(.internalFailure, "EVP_CIPHER_CTX_new") }
        self.handle = handle
    }

    deinit { EVP_CIPHER_CTX_free(handle) }

    /// Feeds associated data (authenticated, not encrypted).
    func update(associatedData: [UInt8], encrypting: Bool) throws(CryptoError) {
        guard !associatedData.isEmpty else { return }
        var length: Int32 = 0
        let ok =
            encrypting
            ? EVP_EncryptUpdate(handle, nil, &length, associatedData, Int32(associatedData.count))
            : EVP_DecryptUpdate(handle, nil, &length, associatedData, Int32(associatedData.count))
        guard ok == 1 else { throw OpenSSLErrorQueue.error(.internalFailure, "EVP_CipherUpdate (associated data)") }
    }
}
