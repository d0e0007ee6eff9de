import AttestCore
import AttestCrypto
import AttestTesting
import Testing

@Suite("Assertion checks, one rejection each (synthetic device)")
struct AssertionRejectionTests {
    let device: SyntheticDevice
    let key: PublicKey
    let appID: AppID
    let clientData = Array("one-time challenge".utf8)

    init() throws {
        device = try SyntheticDevice()
        key = try device.key.publicKey
        appID = try AppID(teamID: "ABCDE12345", bundleID: "com.example.messages")
    }

    func input(_ object: [UInt8], previous: UInt32 = 0, clientData: [UInt8]? = nil) -> AssertionInput {
        AssertionInput(
            object: object, clientDataHash: Digest.sha256(clientData ?? self.clientData), publicKey: key, appIDs: [appID],
            previousCounter: previous)
    }

    func object(counter: UInt32 = 1, rpIDHash: [UInt8]? = nil, signer: PrivateKey? = nil, extensions: [UInt8] = []) throws -> [UInt8] {
        try device.assertion(
            clientDataHash: Digest.sha256(clientData), rpIDHash: rpIDHash ?? appID.rpIDHash, counter: counter,
            extensions: extensions, signer: signer)
    }

    @Test("accepts a fresh assertion and returns its counter")
    func baseline() throws {
        #expect(try AssertionVerifier.verify(input(object(counter: 7), previous: 3)).counter == 7)
    }

    @Test("accepts an assertion with an iOS 27 extension map after the fixed fields")
    func extensions() throws {
        let map = AttestationParts.iOS27Extensions(bundleVersion: "27.1", category: 2)
        let result = try AssertionVerifier.verify(input(object(extensions: map)))
        #expect(result.extensions?.validationCategory?.name == "testflight")
    }

    @Test("rejects a replay at the stored counter")
    func replay() throws {
        #expect(throws: AttestError(.counterNotIncreasing, "")) { try AssertionVerifier.verify(input(object(counter: 5), previous: 5)) }
    }

    @Test("rejects a lower counter, and counter 0 on the first assertion", arguments: [(UInt32(4), UInt32(5)), (0, 0)])
    func lowerCounter(_ counter: UInt32, _ previous: UInt32) throws {
        #expect(throws: AttestError(.counterNotIncreasing, "")) {
            try AssertionVerifier.verify(input(object(counter: counter), previous: previous))
        }
    }

    @Test("reads the counter as unsigned 32-bit: 0xFFFFFFFF is accepted once, then nothing is greater")
    func maximumCounter() throws {
        #expect(try AssertionVerifier.verify(input(object(counter: .max), previous: 0x7FFF_FFFF)).counter == .max)
        #expect(throws: AttestError(.counterNotIncreasing, "")) {
            try AssertionVerifier.verify(input(object(counter: .max), previous: .max))
        }
    }

    @Test("rejects a signature by another key")
    func otherKey() throws {
        #expect(throws: AttestError(.signature, "")) { try AssertionVerifier.verify(input(object(signer: try PrivateKey.generate(.p256)))) }
    }

    @Test("rejects WebAuthn-style signatures and the nonce hashed twice or used as the digest", arguments: 0..<2)
    func wrongSignedMessage(_ variant: Int) throws {
        let authData = appID.rpIDHash + [0x40, 0, 0, 0, 1]
        let nonce = Digest.sha256(authData + Digest.sha256(clientData))
        // 0: signs authData || clientDataHash (ECDSA sees the nonce as digest).
        // 1: signs SHA-256(nonce) (ECDSA sees the nonce hashed twice).
        let message = variant == 0 ? authData + Digest.sha256(clientData) : Digest.sha256(nonce)
        let signature = try device.key.sign(message, digest: .sha256)
        let object = CBORValue.map([
            CBORMapEntry(key: .text("signature"), value: .bytes(signature)),
            CBORMapEntry(key: .text("authenticatorData"), value: .bytes(authData)),
        ]).encoded
        #expect(throws: AttestError(.signature, "")) { try AssertionVerifier.verify(input(object)) }
    }

    @Test("rejects an rpIdHash for another App ID")
    func otherApp() throws {
        let other = try AppID(teamID: "ABCDE12345", bundleID: "com.example.other")
        #expect(throws: AttestError(.rpIDMismatch, "")) { try AssertionVerifier.verify(input(object(rpIDHash: other.rpIDHash))) }
    }

    @Test("rejects client data other than the signed challenge")
    func otherChallenge() throws {
        #expect(throws: AttestError(.signature, "")) {
            try AssertionVerifier.verify(input(object(), clientData: Array("another challenge".utf8)))
        }
    }

    @Test("rejects a map without signature or authenticatorData, or with a third key", arguments: 0..<3)
    func structure(_ variant: Int) throws {
        var entries = try CBORDecoder.decode(try object()[...], limits: .appAttest).mapEntries ?? []
        switch variant {
        case 0: entries.removeFirst()
        case 1: entries.removeLast()
        default: entries.append(CBORMapEntry(key: .text("extra"), value: .null))
        }
        #expect(throws: AttestError(.assertionStructure, "")) { try AssertionVerifier.verify(input(CBORValue.map(entries).encoded)) }
    }

    @Test("rejects signatures of 0, 1 or 200 bytes", arguments: [0, 1, 200])
    func signatureLength(_ length: Int) throws {
        let object = CBORValue.map([
            CBORMapEntry(key: .text("signature"), value: .bytes([UInt8](repeating: 0x30, count: length))),
            CBORMapEntry(key: .text("authenticatorData"), value: .bytes(appID.rpIDHash + [0x40, 0, 0, 0, 1])),
        ]).encoded
        #expect(throws: AttestError(.signatureEncoding, "")) { try AssertionVerifier.verify(input(object)) }
    }

    @Test("rejects authenticator data shorter than 37 bytes")
    func shortAuthData() throws {
        let object = CBORValue.map([
            CBORMapEntry(key: .text("signature"), value: .bytes([UInt8](repeating: 0x30, count: 70))),
            CBORMapEntry(key: .text("authenticatorData"), value: .bytes(appID.rpIDHash + [0x40, 0, 0])),
        ]).encoded
        #expect(throws: AttestError(.authDataTruncated, "")) { try AssertionVerifier.verify(input(object)) }
    }

    @Test("rejects a registered key that is not P-256")
    func wrongKeyType() throws {
        var request = input(try object())
        request.publicKey = try PrivateKey.generate(.p384).publicKey
        #expect(throws: AttestError(.invalidPublicKey, "")) { try AssertionVerifier.verify(request) }
    }
}
