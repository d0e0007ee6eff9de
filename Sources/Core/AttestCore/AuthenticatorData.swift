/// WebAuthn-style authenticator data as App Attest produces it, parsed by position and length.
///
/// Flags are reported but never used for framing: genuine assertions set AT with no attested data,
/// and iOS 27 attestations append an extension map with ED clear.
package struct AuthenticatorData: Sendable, Hashable {
    /// The exact bytes, as signed; never re-encoded.
    package let rawBytes: [UInt8]
    /// SHA-256 of the App ID.
    package let rpIDHash: [UInt8]
    package let flags: UInt8
    /// Unsigned 32-bit big-endian counter.
    package let signCount: UInt32
    /// Present in attestations only.
    package let attestedCredential: AttestedCredentialData?
    /// The optional trailing extension map (iOS 27 and later).
    package let extensions: AuthenticatorExtensions?

    /// Largest extension map accepted after the fixed fields; Apple's 2026 sample uses 62 bytes.
    static let maximumExtensionsLength = 1024
    static let fixedLength = 37
    static let attestedCredentialFlag: UInt8 = 0x40

    /// Parses attestation authenticator data: fixed fields, attested credential data, then at most
    /// one bounded CBOR map and nothing else.
    package static func parseAttestation(_ bytes: [UInt8]) throws(AttestError) -> AuthenticatorData {
        var cursor = fixedLength
        guard bytes.count >= fixedLength + 18 else {
            throw AttestError(.authDataTruncated, "attestation authenticator data is \(bytes.count) bytes, fewer than 55")
        }
        // A check, not framing: every genuine attestation sets AT; its absence means no credential.
        guard bytes[32] & attestedCredentialFlag != 0 else {
            throw AttestError(.credentialKey, "the AT flag is clear: no attested credential data")
        }
        let aaguid = Array(bytes[cursor..<cursor + 16])
        cursor += 16
        let idLength = Int(bytes[cursor]) << 8 | Int(bytes[cursor + 1])
        cursor += 2
        guard idLength <= bytes.count - cursor else {
            throw AttestError(.authDataTruncated, "credentialIdLength \(idLength) runs past the end of authenticator data")
        }
        let credentialID = Array(bytes[cursor..<cursor + idLength])
        cursor += idLength
        let key = try COSEKey.parse(bytes[cursor...])
        cursor += key.encodedLength
        let credential = AttestedCredentialData(aaguid: aaguid, credentialID: credentialID, publicKey: key)
        return try AuthenticatorData(bytes, credential: credential, extensionsFrom: cursor)
    }

    /// Parses assertion authenticator data: 37 fixed bytes, optionally followed by one extension map.
    package static func parseAssertion(_ bytes: [UInt8]) throws(AttestError) -> AuthenticatorData {
        guard bytes.count >= fixedLength else {
            throw AttestError(.authDataTruncated, "assertion authenticator data is \(bytes.count) bytes, fewer than 37")
        }
        return try AuthenticatorData(bytes, credential: nil, extensionsFrom: fixedLength)
    }

    private init(_ bytes: [UInt8], credential: AttestedCredentialData?, extensionsFrom offset: Int) throws(AttestError) {
        rawBytes = bytes
        rpIDHash = Array(bytes[0..<32])
        flags = bytes[32]
        signCount = UInt32(bytes[33]) << 24 | UInt32(bytes[34]) << 16 | UInt32(bytes[35]) << 8 | UInt32(bytes[36])
        attestedCredential = credential
        let rest = bytes[offset...]
        extensions = rest.isEmpty ? nil : try AuthenticatorExtensions.parse(rest)
    }
}

/// The attested credential data of an attestation.
package struct AttestedCredentialData: Sendable, Hashable {
    /// The 16 raw aaguid bytes.
    package let aaguid: [UInt8]
    package let credentialID: [UInt8]
    package let publicKey: COSEKey
}

/// An EC2 P-256 ES256 COSE key (RFC 9053): the only kind App Attest emits.
package struct COSEKey: Sendable, Hashable {
    package let x: [UInt8]
    package let y: [UInt8]
    /// How many bytes the key took in authenticator data.
    package let encodedLength: Int

    /// `04 || x || y`.
    package var uncompressedPoint: [UInt8] { [0x04] + x + y }

    static func parse(_ bytes: ArraySlice<UInt8>) throws(AttestError) -> COSEKey {
        guard !bytes.isEmpty else { throw AttestError(.credentialKey, "authenticator data has no credential public key") }
        let decoded: (value: CBORValue, length: Int)
        do {
            decoded = try CBORDecoder.decodePrefix(bytes, limits: .appAttest)
        } catch {
            throw AttestError(.credentialKey, "credential public key is not a CBOR item (\(error.code.identifier))")
        }
        let map = decoded.value
        guard map.mapEntries != nil else { throw AttestError(.credentialKey, "credential public key is not a map") }
        guard map[.unsigned(1)] == .unsigned(2) else { throw AttestError(.credentialKey, "COSE kty is not EC2 (2)") }
        guard map[.unsigned(3)] == .negative(6) else { throw AttestError(.credentialKey, "COSE alg is not ES256 (-7)") }
        guard map[.negative(0)] == .unsigned(1) else { throw AttestError(.credentialKey, "COSE crv is not P-256 (1)") }
        guard case .bytes(let x)? = map[.negative(1)], x.count == 32,
            case .bytes(let y)? = map[.negative(2)], y.count == 32
        else { throw AttestError(.credentialKey, "COSE x and y must be 32-byte strings") }
        return COSEKey(x: x, y: y, encodedLength: decoded.length)
    }
}

/// The values of the optional extension map Apple appends from iOS 27 on.
package struct AuthenticatorExtensions: Sendable, Hashable {
    /// `apple_bundle_version_01`: the app's bundle version.
    package let bundleVersion: String?
    /// `apple_validation_category_01`: how the app was signed and distributed.
    package let validationCategory: ValidationCategory?
    /// Keys the map held that attestd does not interpret, for diagnostics.
    package let otherKeys: [String]

    static func parse(_ bytes: ArraySlice<UInt8>) throws(AttestError) -> AuthenticatorExtensions {
        guard bytes.count <= AuthenticatorData.maximumExtensionsLength else {
            throw AttestError(
                .authDataExtensions,
                "\(bytes.count) bytes follow the fixed fields; at most \(AuthenticatorData.maximumExtensionsLength) are allowed")
        }
        let value: CBORValue
        do {
            value = try CBORDecoder.decode(bytes, limits: .appAttest)
        } catch {
            throw AttestError(.authDataExtensions, "bytes after the credential are not one CBOR map (\(error.code.identifier))")
        }
        guard let entries = value.mapEntries else {
            throw AttestError(.authDataExtensions, "bytes after the credential are not a CBOR map")
        }
        var bundleVersion: String?
        var category: ValidationCategory?
        var others: [String] = []
        for entry in entries {
            switch entry.key.textValue {
            case "apple_bundle_version_01":
                guard let text = entry.value.textValue else {
                    throw AttestError(.authDataExtensions, "apple_bundle_version_01 is not a text string")
                }
                bundleVersion = text
            case "apple_validation_category_01":
                category = try ValidationCategory(cbor: entry.value)
            case let key?:
                others.append(key)
            case nil:
                others.append(entry.key.diagnosticNotation)
            }
        }
        return AuthenticatorExtensions(bundleVersion: bundleVersion, validationCategory: category, otherKeys: others)
    }
}

/// `apple_validation_category_01`: a 4-byte little-endian value naming how the app was signed.
package struct ValidationCategory: Sendable, Hashable {
    package let rawValue: UInt32

    package init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    init(cbor: CBORValue) throws(AttestError) {
        switch cbor {
        case .bytes(let bytes) where bytes.count == 4:
            rawValue = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
        case .unsigned(let value) where value <= UInt64(UInt32.max):
            rawValue = UInt32(value)
        default:
            throw AttestError(.authDataExtensions, "apple_validation_category_01 is not a 4-byte value")
        }
    }

    /// Apple's name for the category, or "unknown".
    package var name: String {
        switch rawValue {
        case 1: "os_executable"
        case 2: "testflight"
        case 3: "development"
        case 4: "app_store"
        case 5: "enterprise"
        case 6: "developer_id"
        default: "unknown"
        }
    }
}
