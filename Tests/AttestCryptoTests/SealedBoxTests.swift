import AttestCrypto
import Testing

@Suite("SealedBox: AES-256-GCM")
struct SealedBoxTests {
    let key: [UInt8]
    let plaintext = Array("-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n".utf8)

    init() throws {
        key = try SecureRandom.bytes(32)
    }

    @Test("round trip: nonce || ciphertext || tag, fresh nonce per seal, plaintext not visible")
    func roundTrip() throws {
        let box = try SealedBox.seal(plaintext, key: key, associatedData: Array("aad".utf8))
        #expect(box.count == 12 + plaintext.count + 16)
        #expect(try SealedBox.open(box, key: key, associatedData: Array("aad".utf8)) == plaintext)
        #expect(try SealedBox.seal(plaintext, key: key, associatedData: Array("aad".utf8)) != box)
        let secret = Array("secret".utf8)
        #expect(!(0...(box.count - secret.count)).contains { Array(box[$0..<($0 + secret.count)]) == secret })
        #expect(try SealedBox.open(SealedBox.seal([], key: key), key: key) == [])
    }

    @Test("any changed byte is refused", arguments: [0, 12, 20, -1])
    func tampered(index: Int) throws {
        var box = try SealedBox.seal(plaintext, key: key)
        box[index < 0 ? box.count - 1 : index] ^= 0x01
        #expect(throws: CryptoError(.sealedBoxRefused, "")) { try SealedBox.open(box, key: key) }
    }

    @Test("a wrong key, other associated data or a short box is refused; a key of the wrong length too")
    func wrongKey() throws {
        let box = try SealedBox.seal(plaintext, key: key, associatedData: [1])
        #expect(throws: CryptoError(.sealedBoxRefused, "")) {
            try SealedBox.open(box, key: try SecureRandom.bytes(32), associatedData: [1])
        }
        #expect(throws: CryptoError(.sealedBoxRefused, "")) { try SealedBox.open(box, key: key, associatedData: [2]) }
        #expect(throws: CryptoError(.sealedBoxRefused, "")) { try SealedBox.open(Array(box.prefix(20)), key: key) }
        #expect(throws: CryptoError(.invalidSealingKey, "")) { try SealedBox.seal(plaintext, key: Array(key.prefix(16))) }
    }

    @Test("ES256 signatures are raw r || s and convert back to DER that verifies")
    func es256() throws {
        let signer = try PrivateKey.generate(.p256)
        let message = Array("header.payload".utf8)
        let raw = try signer.signES256(message)
        #expect(raw.count == 64)
        #expect(try signer.publicKey.verifySignature(ECDSASignature.der(fromRaw: raw), over: message, digest: .sha256))
    }
}
