import AttestCore
import AttestCrypto
import AttestTesting
import Testing

/// Rejections added after a mutation run (scripts/check mutations) found checks no test pinned.
@Suite("Checks found unpinned by the mutation run")
struct MutationFoundTests {
    @Test("rejects a credential certificate with two nonce extensions")
    func twoNonceExtensions() throws {
        let world = try World()
        var parts = world.parts()
        parts.leaf.extraExtensions = [
            .init(
                oid: "1.2.840.113635.100.8.2", isCritical: false,
                value: [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + [UInt8](repeating: 1, count: 32))
        ]
        try expectRejection(.nonceExtension, world, parts)
    }

    @Test("rejects attestation authData shorter than 55 bytes without reading past it")
    func shortAttestationAuthData() throws {
        let world = try World()
        let object = try world.device.attestationObject(world.parts(), pki: world.pki)
        var root = try CBORDecoder.decode(object[...], limits: .appAttest).mapEntries ?? []
        let authData = try #require(root[2].value.bytesValue)
        root[2].value = .bytes(Array(authData.prefix(54)))
        #expect(throws: AttestError(.authDataTruncated, "")) { try world.verifier.verify(world.input(CBORValue.map(root).encoded)) }
    }

    @Test("rejects an extension map over 1 KiB")
    func oversizedExtensions() throws {
        let world = try World()
        var parts = world.parts()
        parts.trailingExtensions = AttestationParts.iOS27Extensions(bundleVersion: String(repeating: "9", count: 1100), category: 4)
        try expectRejection(.authDataExtensions, world, parts)
    }

    @Test("rejects a nonce extension whose DER length claims one byte more than present")
    func derLengthTooLong() throws {
        let world = try World()
        var parts = world.parts()
        let authData = parts.authenticatorData
        let nonce = Digest.sha256(authData + parts.clientDataHash)
        parts.nonceExtensionValue = [0x30, 0x25, 0xA1, 0x22, 0x04, 0x20] + nonce
        try expectRejection(.nonceExtension, world, parts)
    }

    @Test("rejects a fourth top-level entry with a non-text key")
    func nonTextTopLevelKey() throws {
        let world = try World()
        var parts = world.parts()
        parts.extraTopLevelEntries = [CBORMapEntry(key: .unsigned(1), value: .null)]
        try expectRejection(.attestationStructure, world, parts)
    }

    @Test("refuses an assertion object over 2 KiB before decoding")
    func oversizedAssertion() throws {
        let device = try SyntheticDevice()
        let appID = try AppID(teamID: "ABCDE12345", bundleID: "com.example.messages")
        let object = CBORValue.map([
            CBORMapEntry(key: .text("signature"), value: .bytes([UInt8](repeating: 0x30, count: 3000))),
            CBORMapEntry(key: .text("authenticatorData"), value: .bytes(appID.rpIDHash + [0x40, 0, 0, 0, 1])),
        ]).encoded
        let input = AssertionInput(
            object: object, clientDataHash: Digest.sha256([1]), publicKey: try device.key.publicKey, appIDs: [appID], previousCounter: 0)
        #expect(throws: AttestError(.cborTooLarge, "")) { try AssertionVerifier.verify(input) }
    }
}
