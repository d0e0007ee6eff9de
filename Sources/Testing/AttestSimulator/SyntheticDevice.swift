package import AttestCore
package import AttestCrypto

/// A fake device with a fresh P-256 key that produces App Attest objects byte-compatible with
/// real ones, signed by a `SyntheticPKI`.
package struct SyntheticDevice: Sendable {
    package let key: PrivateKey
    /// `04 || X || Y`.
    package let publicPoint: [UInt8]
    /// SHA-256 of `publicPoint`.
    package let keyID: [UInt8]
    /// The last counter used in an assertion.
    package var counter: UInt32 = 0

    package init() throws(CryptoError) {
        key = try PrivateKey.generate(.p256)
        guard let point = try key.publicKey.uncompressedPoint else {
            throw CryptoError(.invalidPublicKey, "generated key has no uncompressed point")
        }
        publicPoint = point
        keyID = Digest.sha256(point)
    }

    /// The device of a saved key (`SimulatorDeviceKeys`), its last assertion counter `counter`.
    package init(key: PrivateKey, counter: UInt32) throws(CryptoError) {
        guard key.curve == .p256, let point = try key.publicKey.uncompressedPoint else {
            throw CryptoError(.invalidPublicKey, "a device key is a P-256 key")
        }
        self.key = key
        publicPoint = point
        keyID = Digest.sha256(point)
        self.counter = counter
    }

    /// The fields of one attestation, filled with what a genuine device would send.
    /// Tests change exactly one field, then call `attestationObject`.
    package func attestationParts(
        appID: AppID, environment: AppAttestEnvironment, clientDataHash: [UInt8], time: Int64
    ) -> AttestationParts {
        AttestationParts(
            rpIDHash: appID.rpIDHash, aaguid: environment.aaguid, credentialID: keyID,
            coseKey: COSEKeyEncoding.encode(point: publicPoint), clientDataHash: clientDataHash, time: time)
    }

    /// Builds the CBOR attestation object from `parts`.
    package func attestationObject(_ parts: AttestationParts, pki: SyntheticPKI) throws(CryptoError) -> [UInt8] {
        let authData = parts.authenticatorData
        let nonce = Digest.sha256(authData + parts.clientDataHash)
        let nonceValue = parts.nonceExtensionValue ?? ([0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + nonce)
        let nonceExtension =
            parts.omitNonceExtension
            ? nil
            : CertificateTemplate.RawExtension(oid: "1.2.840.113635.100.8.2", isCritical: parts.nonceExtensionCritical, value: nonceValue)
        let subjectKey: PublicKey
        if let override = parts.leaf.subjectKeyOverride {
            subjectKey = try override.publicKey
        } else {
            subjectKey = try key.publicKey
        }
        let leaf = try pki.credentialCertificate(for: subjectKey, nonceExtension: nonceExtension, leaf: parts.leaf, time: parts.time)
        let chain = parts.chain?(leaf, pki.intermediate) ?? [leaf.derBytes, pki.intermediate.derBytes]
        var entries = [
            CBORMapEntry(key: .text("fmt"), value: .text(parts.format)),
            CBORMapEntry(
                key: .text("attStmt"),
                value: .map([
                    CBORMapEntry(key: .text("x5c"), value: .array(chain.map { .bytes($0) })),
                    CBORMapEntry(key: .text("receipt"), value: .bytes(parts.receipt)),
                ])),
            CBORMapEntry(key: .text("authData"), value: .bytes(authData)),
        ]
        entries += parts.extraTopLevelEntries
        return CBORValue.map(entries).encoded
    }

    /// An assertion over `clientData` with the next counter (or `counter` when given).
    package mutating func assertion(
        clientData: [UInt8], appID: AppID, counter explicitCounter: UInt32? = nil, extensions: [UInt8] = []
    ) throws(CryptoError) -> [UInt8] {
        let next = explicitCounter ?? counter &+ 1
        counter = next
        return try assertion(clientDataHash: Digest.sha256(clientData), rpIDHash: appID.rpIDHash, counter: next, extensions: extensions)
    }

    /// An assertion with every field explicit. For rejection tests only: the simulator uses
    /// `assertion(clientData:appID:)`.
    package func assertion(
        clientDataHash: [UInt8], rpIDHash: [UInt8], counter: UInt32, flags: UInt8 = 0x40, extensions: [UInt8] = [],
        signer: PrivateKey? = nil
    ) throws(CryptoError) -> [UInt8] {
        let authData = rpIDHash + [flags] + BigEndian.bytes(counter) + extensions
        let nonce = Digest.sha256(authData + clientDataHash)
        let signature = try (signer ?? key).sign(nonce, digest: .sha256)
        return CBORValue.map([
            CBORMapEntry(key: .text("signature"), value: .bytes(signature)),
            CBORMapEntry(key: .text("authenticatorData"), value: .bytes(authData)),
        ]).encoded
    }
}

/// The fields of a synthetic attestation object. `SyntheticDevice.attestationParts` fills them as a
/// genuine device would, and the simulator sends them so; the overrides (lengths, nonce extension,
/// chain, extra entries, leaf options) exist for rejection tests, which change exactly one.
package struct AttestationParts: Sendable {
    package var format = "apple-appattest"
    package var rpIDHash: [UInt8]
    package var flags: UInt8 = 0x40
    package var signCount: UInt32 = 0
    package var aaguid: [UInt8]
    package var credentialID: [UInt8]
    /// The credentialIdLength field; nil writes the real length.
    package var credentialIDLengthOverride: UInt16?
    package var coseKey: [UInt8]
    /// Bytes after the COSE key (an iOS 27 extension map, or junk).
    package var trailingExtensions: [UInt8] = []
    package var clientDataHash: [UInt8]
    package var time: Int64
    package var receipt: [UInt8] = Array("synthetic receipt".utf8)
    /// Replaces the whole nonce extension value (DER) instead of the correct one.
    package var nonceExtensionValue: [UInt8]?
    package var nonceExtensionCritical = false
    package var omitNonceExtension = false
    package var leaf = LeafOptions()
    /// Replaces x5c, given the leaf and intermediate.
    package var chain: (@Sendable (Certificate, Certificate) -> [[UInt8]])?
    package var extraTopLevelEntries: [CBORMapEntry] = []

    /// The authenticator data these fields encode to.
    package var authenticatorData: [UInt8] {
        let length = credentialIDLengthOverride ?? UInt16(credentialID.count)
        return rpIDHash + [flags] + BigEndian.bytes(signCount) + aaguid
            + [UInt8(length >> 8), UInt8(length & 0xFF)] + credentialID + coseKey + trailingExtensions
    }

    /// The iOS 27 extension map with a bundle version and a validation category.
    package static func iOS27Extensions(bundleVersion: String, category: UInt32) -> [UInt8] {
        CBORValue.map([
            CBORMapEntry(key: .text("apple_bundle_version_01"), value: .text(bundleVersion)),
            CBORMapEntry(
                key: .text("apple_validation_category_01"),
                value: .bytes([UInt8(category & 0xFF), UInt8(category >> 8 & 0xFF), UInt8(category >> 16 & 0xFF), UInt8(category >> 24)])),
        ]).encoded
    }
}

/// COSE_Key encoding of a P-256 point, as App Attest writes it.
package enum COSEKeyEncoding {
    /// `{1: 2, 3: -7, -1: 1, -2: x, -3: y}` with optional overrides for rejection tests.
    package static func encode(
        point: [UInt8], kty: CBORValue = .unsigned(2), alg: CBORValue = .negative(6), crv: CBORValue = .unsigned(1)
    ) -> [UInt8] {
        CBORValue.map([
            CBORMapEntry(key: .unsigned(1), value: kty),
            CBORMapEntry(key: .unsigned(3), value: alg),
            CBORMapEntry(key: .negative(0), value: crv),
            CBORMapEntry(key: .negative(1), value: .bytes(Array(point[1..<33]))),
            CBORMapEntry(key: .negative(2), value: .bytes(Array(point[33..<65]))),
        ]).encoded
    }
}

enum BigEndian {
    static func bytes(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
