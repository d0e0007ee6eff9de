import AttestCore
import AttestCrypto
import AttestTesting
import Testing

/// A synthetic PKI, device and integration; each test changes exactly one thing from `parts()`.
struct World {
    static let time: Int64 = 1_800_000_000  // 2027-01-15, an injected clock
    let pki: SyntheticPKI
    let device: SyntheticDevice
    let verifier: AttestationVerifier
    let appID: AppID
    let clientDataHash: [UInt8]

    init() throws {
        pki = try SyntheticPKI(validAround: World.time)
        device = try SyntheticDevice()
        verifier = try AttestationVerifier(anchor: pki.anchor)
        appID = try AppID(teamID: "ABCDE12345", bundleID: "com.example.messages")
        clientDataHash = Digest.sha256(Array("challenge bytes".utf8))
    }

    func parts(environment: AppAttestEnvironment = .production) -> AttestationParts {
        device.attestationParts(appID: appID, environment: environment, clientDataHash: clientDataHash, time: World.time)
    }

    func input(
        _ object: [UInt8], time: Int64 = World.time, keyID: [UInt8]? = nil,
        environments: Set<AppAttestEnvironment> = [.production, .development]
    ) -> AttestationInput {
        AttestationInput(
            object: object, keyID: keyID ?? device.keyID, clientDataHash: clientDataHash, appIDs: [appID],
            allowedEnvironments: environments, time: time)
    }

    @discardableResult
    func verify(_ parts: AttestationParts, time: Int64 = World.time) throws -> VerifiedAttestation {
        try verifier.verify(input(try device.attestationObject(parts, pki: pki), time: time))
    }
}

/// `#expect(throws:)` for one code, with the object built outside the closure.
func expectRejection(
    _ code: AttestError.Code, _ world: World, _ parts: AttestationParts, time: Int64 = World.time,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let object = try world.device.attestationObject(parts, pki: world.pki)
    #expect(throws: AttestError(code, ""), sourceLocation: sourceLocation) { try world.verifier.verify(world.input(object, time: time)) }
}

@Suite("Attestation checks, one rejection each (synthetic device)")
struct AttestationRejectionTests {
    @Test("accepts the unmodified synthetic attestation in both environments", arguments: AppAttestEnvironment.allCases)
    func baseline(_ environment: AppAttestEnvironment) throws {
        let world = try World()
        let result = try world.verify(world.parts(environment: environment))
        #expect(result.environment == environment)
        #expect(result.keyID == world.device.keyID)
        #expect(result.publicKey == world.device.publicPoint)
        #expect(result.receipt == Array("synthetic receipt".utf8))
    }

    // C5, C6, C7, C8: object structure.

    @Test("rejects a byte after the attestation object")
    func trailingByte() throws {
        let world = try World()
        let object = try world.device.attestationObject(world.parts(), pki: world.pki) + [0x00]
        #expect(throws: AttestError(.cborTrailingBytes, "")) { try world.verifier.verify(world.input(object)) }
    }

    @Test("rejects a duplicate fmt key")
    func duplicateFormat() throws {
        let world = try World()
        var parts = world.parts()
        parts.extraTopLevelEntries = [CBORMapEntry(key: .text("fmt"), value: .text("none"))]
        try expectRejection(.cborDuplicateKey, world, parts)
    }

    @Test("accepts a non-shortest map header (a leniency, pinned)")
    func nonCanonicalHeader() throws {
        let world = try World()
        var object = try world.device.attestationObject(world.parts(), pki: world.pki)
        #expect(object[0] == 0xA3)
        object.replaceSubrange(0..<1, with: [0xB8, 0x03])
        _ = try world.verifier.verify(world.input(object))
    }

    @Test("rejects an extra top-level key")
    func extraTopLevelKey() throws {
        let world = try World()
        var parts = world.parts()
        parts.extraTopLevelEntries = [CBORMapEntry(key: .text("extra"), value: .unsigned(1))]
        try expectRejection(.attestationStructure, world, parts)
    }

    @Test("rejects wrong types for fmt, attStmt, x5c, authData and receipt", arguments: 0..<6)
    func wrongTypes(_ variant: Int) throws {
        let world = try World()
        let object = try world.device.attestationObject(world.parts(), pki: world.pki)
        var root = try CBORDecoder.decode(object[...], limits: .appAttest).mapEntries ?? []
        var statement = root[1].value.mapEntries ?? []
        switch variant {
        case 0: root[0].value = .bytes(Array("apple-appattest".utf8))
        case 1: root[1].value = .array([])
        case 2: root[2].value = .text("authData")
        case 3: statement[0].value = .map([])
        case 4: statement.remove(at: 1)
        default: root.remove(at: 1)
        }
        if variant == 3 || variant == 4 { root[1].value = .map(statement) }
        #expect(throws: AttestError(.attestationStructure, "")) { try world.verifier.verify(world.input(CBORValue.map(root).encoded)) }
    }

    @Test("accepts any receipt bytes without verifying them (receipts are stored, not checked)")
    func garbageReceipt() throws {
        let world = try World()
        var parts = world.parts()
        parts.receipt = [0xDE, 0xAD]
        #expect(try world.verify(parts).receipt == [0xDE, 0xAD])
    }

    @Test("refuses objects over 16 KiB before decoding")
    func oversizedObject() throws {
        let world = try World()
        var parts = world.parts()
        parts.chain = { leaf, intermediate in [leaf.derBytes + [UInt8](repeating: 0, count: 20_000), intermediate.derBytes] }
        try expectRejection(.cborTooLarge, world, parts)
    }

    // D3, C9, X2-X4: format and x5c shape.

    @Test("rejects fmt other than apple-appattest", arguments: ["packed", "none", "apple"])
    func format(_ format: String) throws {
        let world = try World()
        var parts = world.parts()
        parts.format = format
        try expectRejection(.fmt, world, parts)
    }

    @Test("rejects x5c with 0, 1 or 3 certificates", arguments: [0, 1, 3])
    func x5cCount(_ count: Int) throws {
        let world = try World()
        var parts = world.parts()
        parts.chain = { leaf, intermediate in Array([leaf.derBytes, intermediate.derBytes, intermediate.derBytes].prefix(count)) }
        try expectRejection(.x5cShape, world, parts)
    }

    @Test("rejects an x5c entry that is not DER")
    func x5cNotDER() throws {
        let world = try World()
        var parts = world.parts()
        parts.chain = { _, intermediate in [[0x30, 0x03, 0x02, 0x01, 0x01], intermediate.derBytes] }
        try expectRejection(.certificateEncoding, world, parts)
    }

    @Test("rejects the order [intermediate, leaf] (X3)")
    func swappedOrder() throws {
        let world = try World()
        var parts = world.parts()
        parts.chain = { leaf, intermediate in [intermediate.derBytes, leaf.derBytes] }
        try expectRejection(.leafNotEndEntity, world, parts)
    }

    @Test("rejects a credential certificate that is a CA (X3)")
    func leafIsCA() throws {
        let world = try World()
        var parts = world.parts()
        parts.leaf.basicConstraints = "critical,CA:TRUE"
        try expectRejection(.leafNotEndEntity, world, parts)
    }

    @Test("rejects a credential certificate with an RSA or P-384 key", arguments: ["rsa", "p384"])
    func leafKeyType(_ kind: String) throws {
        let world = try World()
        var parts = world.parts()
        parts.leaf.subjectKeyOverride = kind == "rsa" ? try PrivateKey.generateRSA(bits: 2048) : try PrivateKey.generate(.p384)
        try expectRejection(.credentialKey, world, parts)
    }

    // X1, X2, X5-X7: path validation.

    @Test("rejects a chain to a self-made root with Apple's name (X1)")
    func selfMadeRoot() throws {
        let world = try World()
        let impostor = try SyntheticPKI(validAround: World.time, rootName: "Synthetic App Attestation Root CA")
        let object = try world.device.attestationObject(world.parts(), pki: impostor)
        #expect(throws: AttestError(.chainInvalid(.signatureInvalid), "")) { try world.verifier.verify(world.input(object)) }
    }

    @Test("rejects a leaf whose intermediate is missing from x5c (X2)")
    func missingIssuer() throws {
        let world = try World()
        let unrelated = try SyntheticPKI(validAround: World.time, rootName: "Unrelated Root")
        var parts = world.parts()
        parts.chain = { leaf, _ in [leaf.derBytes, unrelated.root.derBytes] }
        try expectRejection(.chainInvalid(.unableToGetIssuer), world, parts)
    }

    @Test("rejects an intermediate without CA:TRUE or without keyCertSign (X5)", arguments: [0, 1])
    func intermediateNotCA(_ variant: Int) throws {
        let world = try World()
        var options = SyntheticPKI.IntermediateOptions()
        if variant == 0 { options.basicConstraints = "critical,CA:FALSE" } else { options.keyUsage = "critical,digitalSignature" }
        let broken = try SyntheticPKI(
            rootKey: world.pki.rootKey, root: world.pki.root, validAround: World.time, intermediateOptions: options)
        let object = try world.device.attestationObject(world.parts(), pki: broken)
        #expect(throws: AttestError(.chainInvalid(.invalidCA), "")) { try world.verifier.verify(world.input(object)) }
    }

    @Test("rejects a leaf with an unknown critical extension (X6)")
    func unknownCriticalExtension() throws {
        let world = try World()
        var parts = world.parts()
        parts.leaf.extraExtensions = [.init(oid: "1.2.840.113635.100.8.99", isCritical: true, value: [0x05, 0x00])]
        try expectRejection(.chainInvalid(.unhandledCriticalExtension), world, parts)
    }

    @Test("accepts Apple's newer non-critical leaf extensions (100.8.5, 100.8.7, EKU 100.4.24)")
    func newerNonCriticalExtensions() throws {
        let world = try World()
        var parts = world.parts()
        parts.leaf.extraExtensions = [
            .init(oid: "1.2.840.113635.100.8.5", isCritical: false, value: [0x04, 0x02, 0x41, 0x42]),
            .init(oid: "1.2.840.113635.100.8.7", isCritical: false, value: [0x04, 0x02, 0x32, 0x37]),
            .init(
                oid: "2.5.29.37", isCritical: false, value: [0x30, 0x0B, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x63, 0x64, 0x04, 0x18]),
        ]
        try world.verify(parts)
    }

    @Test("checks the leaf's validity to the second at both ends (X7)")
    func validityBoundaries() throws {
        let world = try World()
        var parts = world.parts()
        parts.leaf.notBefore = World.time + 100
        parts.leaf.notAfter = World.time + 200
        let object = try world.device.attestationObject(parts, pki: world.pki)
        #expect(throws: AttestError(.chainInvalid(.notYetValid), "")) {
            try world.verifier.verify(world.input(object, time: World.time + 99))
        }
        _ = try world.verifier.verify(world.input(object, time: World.time + 100))
        _ = try world.verifier.verify(world.input(object, time: World.time + 199))
        #expect(throws: AttestError(.chainInvalid(.expired), "")) { try world.verifier.verify(world.input(object, time: World.time + 200)) }
    }

    @Test("re-checks the leaf on the cached-intermediate path: signature, validity and issuer")
    func cachedIntermediateStillChecksLeaf() throws {
        let world = try World()
        #expect(try world.verify(world.parts()).usedCachedIntermediate == false)
        #expect(try world.verify(world.parts()).usedCachedIntermediate == true)
        var expired = world.parts()
        expired.leaf.notAfter = World.time - 1
        expired.leaf.notBefore = World.time - 100
        try expectRejection(.chainInvalid(.expired), world, expired)
        // A leaf signed by another key under an intermediate of the same name and bytes-different
        // certificate must take the full path and fail there.
        let other = try SyntheticPKI(rootKey: try PrivateKey.generate(.p384), root: world.pki.root, validAround: World.time)
        let object = try world.device.attestationObject(world.parts(), pki: other)
        #expect(throws: AttestError(.chainInvalid(.signatureInvalid), "")) { try world.verifier.verify(world.input(object)) }
    }

    // D4, D5: the nonce.

    @Test("rejects a different challenge")
    func challengeChanged() throws {
        let world = try World()
        var parts = world.parts()
        parts.clientDataHash[0] ^= 0x01
        try expectRejection(.nonceMismatch, world, parts)
    }

    static let malformedNonceExtensions: [[UInt8]] = {
        let nonce = [UInt8](repeating: 0xAB, count: 32)
        return [
            [0x30, 0x22, 0x04, 0x20] + nonce,  // no [1] wrapper
            [0x30, 0x25, 0xA1, 0x81, 0x22, 0x04, 0x20] + nonce,  // long-form length where short is required
            [0x30, 0x23, 0xA1, 0x21, 0x04, 0x1F] + nonce.prefix(31),  // 31-byte octet string
            [0x30, 0x46, 0xA1, 0x44, 0x04, 0x20] + nonce + [0x04, 0x20] + nonce,  // two octet strings
            [0x30, 0x24, 0xA2, 0x22, 0x04, 0x20] + nonce,  // [2] instead of [1]
            [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + nonce + [0x00],  // trailing byte
        ]
    }()

    @Test("rejects a nonce extension wrapped any other way", arguments: malformedNonceExtensions)
    func malformedNonce(_ value: [UInt8]) throws {
        let world = try World()
        var parts = world.parts()
        parts.nonceExtensionValue = value
        try expectRejection(.nonceExtension, world, parts)
    }

    @Test("rejects a missing nonce extension")
    func missingNonce() throws {
        let world = try World()
        var parts = world.parts()
        parts.omitNonceExtension = true
        try expectRejection(.nonceExtension, world, parts)
    }

    @Test("rejects a nonce extension marked critical")
    func criticalNonce() throws {
        let world = try World()
        var parts = world.parts()
        parts.nonceExtensionCritical = true
        try expectRejection(.nonceExtension, world, parts)
    }

    // D6-D15.

    @Test("rejects a key ID that is not the certificate key's hash")
    func keyIDMismatch() throws {
        let world = try World()
        let other = try SyntheticDevice()
        var parts = world.parts()
        parts.credentialID = other.keyID
        let object = try world.device.attestationObject(parts, pki: world.pki)
        #expect(throws: AttestError(.keyIDMismatch, "")) { try world.verifier.verify(world.input(object, keyID: other.keyID)) }
    }

    @Test("rejects a key ID that is not 32 bytes", arguments: [0, 31, 33])
    func keyIDLength(_ length: Int) throws {
        let world = try World()
        let object = try world.device.attestationObject(world.parts(), pki: world.pki)
        #expect(throws: AttestError(.keyIDLength, "")) {
            try world.verifier.verify(world.input(object, keyID: [UInt8](repeating: 1, count: length)))
        }
    }

    @Test("rejects a credentialId that differs from the key ID")
    func credentialIDMismatch() throws {
        let world = try World()
        var parts = world.parts()
        parts.credentialID[5] ^= 0xFF
        try expectRejection(.credentialIDMismatch, world, parts)
    }

    @Test("rejects authData truncated inside the credential or with credentialIdLength 65,535", arguments: [0, 1])
    func truncatedAuthData(_ variant: Int) throws {
        let world = try World()
        var parts = world.parts()
        if variant == 0 {
            parts.credentialID = Array(parts.credentialID.prefix(5))  // authData ends at byte 60
            parts.credentialIDLengthOverride = 32
            parts.coseKey = []
        } else {
            parts.credentialIDLengthOverride = 65_535
        }
        try expectRejection(.authDataTruncated, world, parts)
    }

    @Test("rejects an rpIdHash for another App ID")
    func otherApp() throws {
        let world = try World()
        var parts = world.parts()
        parts.rpIDHash = try AppID(teamID: "ABCDE12345", bundleID: "com.example.other").rpIDHash
        try expectRejection(.rpIDMismatch, world, parts)
    }

    @Test("accepts any of an integration's bundle IDs and reports which matched")
    func severalBundleIDs() throws {
        let world = try World()
        let object = try world.device.attestationObject(world.parts(), pki: world.pki)
        var input = world.input(object)
        input.appIDs = [try AppID(teamID: "ABCDE12345", bundleID: "com.example.first"), world.appID]
        #expect(try world.verifier.verify(input).appID == world.appID)
    }

    @Test("rejects a non-zero counter")
    func counterNotZero() throws {
        let world = try World()
        var parts = world.parts()
        parts.signCount = 1
        try expectRejection(.counterNotZero, world, parts)
    }

    @Test("rejects a development key on a production-only integration")
    func developmentOnProduction() throws {
        let world = try World()
        let object = try world.device.attestationObject(world.parts(environment: .development), pki: world.pki)
        #expect(throws: AttestError(.environmentNotAllowed, "")) {
            try world.verifier.verify(world.input(object, environments: [.production]))
        }
    }

    @Test(
        "rejects an aaguid that is neither production nor development",
        arguments: [
            [UInt8](repeating: 0, count: 16), Array("appattest".utf8) + [UInt8](repeating: 0x20, count: 7),
            Array("appattestdevelo".utf8) + [0],
        ])
    func unknownAAGUID(_ aaguid: [UInt8]) throws {
        let world = try World()
        var parts = world.parts()
        parts.aaguid = aaguid
        try expectRejection(.aaguid, world, parts)
    }

    @Test("rejects AT clear, a missing COSE key, ES384, RSA kty or another curve", arguments: 0..<5)
    func badCredentialKey(_ variant: Int) throws {
        let world = try World()
        var parts = world.parts()
        let point = world.device.publicPoint
        switch variant {
        case 0: parts.flags = 0x00
        case 1: parts.coseKey = []
        case 2: parts.coseKey = COSEKeyEncoding.encode(point: point, alg: .negative(34))
        case 3: parts.coseKey = COSEKeyEncoding.encode(point: point, kty: .unsigned(3))
        default: parts.coseKey = COSEKeyEncoding.encode(point: point, crv: .unsigned(2))
        }
        try expectRejection(.credentialKey, world, parts)
    }

    @Test("rejects a COSE key that is not the certificate's key")
    func coseKeyMismatch() throws {
        let world = try World()
        var parts = world.parts()
        parts.coseKey = COSEKeyEncoding.encode(point: try SyntheticDevice().publicPoint)
        try expectRejection(.credentialKeyMismatch, world, parts)
    }

    @Test("accepts iOS 27 authData with a trailing extension map and ED clear, and surfaces its values")
    func iOS27Extensions() throws {
        let world = try World()
        var parts = world.parts()
        parts.trailingExtensions = AttestationParts.iOS27Extensions(bundleVersion: "27.0.1", category: 4)
        #expect(parts.flags & 0x80 == 0)
        let result = try world.verify(parts)
        #expect(result.extensions?.bundleVersion == "27.0.1")
        #expect(result.extensions?.validationCategory?.name == "app_store")
    }

    @Test("rejects bytes after the COSE key that are not exactly one map", arguments: [[UInt8]([0x01]), [0xA0, 0x00], [0x80]])
    func junkAfterCOSEKey(_ junk: [UInt8]) throws {
        let world = try World()
        var parts = world.parts()
        parts.trailingExtensions = junk
        try expectRejection(.authDataExtensions, world, parts)
    }
}
