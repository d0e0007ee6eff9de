package import AttestCrypto

/// Everything one attestation is verified against. Time and identity come in as values.
package struct AttestationInput: Sendable {
    /// The CBOR attestation object.
    package var object: [UInt8]
    /// The key ID the app reports: SHA-256 of the key's uncompressed point, 32 bytes.
    package var keyID: [UInt8]
    /// The clientDataHash the app passed to `attestKey`.
    package var clientDataHash: [UInt8]
    /// The App IDs the integration accepts (its team ID with each of its bundle IDs).
    package var appIDs: [AppID]
    /// The environments the integration accepts.
    package var allowedEnvironments: Set<AppAttestEnvironment>
    /// Verification time, Unix seconds.
    package var time: Int64

    package init(
        object: [UInt8], keyID: [UInt8], clientDataHash: [UInt8], appIDs: [AppID],
        allowedEnvironments: Set<AppAttestEnvironment>, time: Int64
    ) {
        (self.object, self.keyID, self.clientDataHash, self.appIDs, self.allowedEnvironments, self.time) = (
            object, keyID, clientDataHash, appIDs, allowedEnvironments, time
        )
    }
}

/// A key that passed every attestation check. Only `AttestationVerifier` can make one.
package struct VerifiedAttestation: Sendable {
    package let keyID: [UInt8]
    /// The device key as `04 || X || Y`.
    package let publicKey: [UInt8]
    package let environment: AppAttestEnvironment
    /// The App ID whose rpIdHash matched.
    package let appID: AppID
    /// Apple's receipt, for fraud-risk queries later (`ReceiptVerifier.verifyAttestationReceipt`).
    package let receipt: [UInt8]
    /// DER of the credential certificate (x5c[0]): an `ATTEST` receipt's field 3 must equal it.
    package let credentialCertificate: [UInt8]
    /// iOS 27 extension values, when the device sent them.
    package let extensions: AuthenticatorExtensions?
    /// When the credential certificate expires (informational: keys are not re-verified later).
    package let leafNotAfter: Int64?
    /// Whether the intermediate was trusted from the verified-intermediate cache.
    package let usedCachedIntermediate: Bool
    /// SHA-256 of the root the chain ended at (one of the verifier's anchors).
    package let anchorFingerprint: [UInt8]
}

/// Verifies App Attest attestation objects: Apple's nine checks, plus `fmt`, the x5c shape, the
/// credential certificate's shape and the COSE key.
///
/// Check order follows Apple's steps; each check is a named function in `AttestationChecks`
/// and throws `AttestError` with its own code (docs/VERIFICATION.md maps them).
package final class AttestationVerifier: Sendable {
    /// The primary anchor: Apple's App Attestation root in production.
    package var anchor: TrustAnchor { anchors[0] }
    /// Every anchor a chain may end at: the primary first, then roots added beside it (Apple's
    /// next root, announced ahead of a rotation).
    package let anchors: [TrustAnchor]
    /// The OpenSSL path validator pinned to the primary anchor alone.
    package var chains: ChainVerifier { validators[0] }
    /// One path validator per anchor, each pinned to that anchor alone, in `anchors`' order.
    private let validators: [ChainVerifier]

    /// A verifier trusting `anchor` alone.
    package convenience init(anchor: TrustAnchor) throws(AttestError) {
        try self.init(anchors: [anchor])
    }

    /// A verifier trusting each of `anchors` (the first is the primary; at least one).
    package init(anchors: [TrustAnchor]) throws(AttestError) {
        guard !anchors.isEmpty else { throw AttestError(.trustAnchor, "no trust anchor") }
        self.anchors = anchors
        var validators: [ChainVerifier] = []
        for anchor in anchors {
            do {
                validators.append(try ChainVerifier(root: anchor.certificate))
            } catch {
                throw AttestError(.trustAnchor, "cannot build the trust store: \(error.reason)")
            }
        }
        self.validators = validators
    }

    /// Runs every check in order; the first failure is thrown.
    package func verify(_ input: AttestationInput) throws(AttestError) -> VerifiedAttestation {
        guard input.keyID.count == 32 else {
            throw AttestError(.keyIDLength, "key ID is \(input.keyID.count) bytes, not 32")
        }
        let object = try AttestationObject(cbor: input.object)
        try AttestationChecks.format(object)
        let (leaf, usedCache, anchor) = try chained(object, at: input.time)
        try AttestationChecks.nonce(object, leaf: leaf, clientDataHash: input.clientDataHash)
        try AttestationChecks.keyID(leaf, keyID: input.keyID)
        let appID = try AttestationChecks.relyingParty(object.authenticatorData, appIDs: input.appIDs)
        try AttestationChecks.counterIsZero(object.authenticatorData)
        let environment = try AttestationChecks.environment(object.authenticatorData, allowed: input.allowedEnvironments)
        try AttestationChecks.credentialID(object.authenticatorData, keyID: input.keyID)
        try AttestationChecks.credentialKey(object.authenticatorData, leaf: leaf)
        return VerifiedAttestation(
            keyID: input.keyID, publicKey: leaf.point, environment: environment, appID: appID,
            receipt: object.receipt, credentialCertificate: leaf.certificate.derBytes, extensions: object.authenticatorData.extensions,
            leafNotAfter: leaf.certificate.notAfter, usedCachedIntermediate: usedCache,
            anchorFingerprint: anchor.certificate.sha256Fingerprint)
    }

    /// Step 1: the credential certificate and the anchor its chain ends at. Each anchor is tried
    /// with its own validator (an added root never widens what the primary accepts); when none
    /// accepts, the primary's refusal is the answer.
    private func chained(_ object: AttestationObject, at time: Int64) throws(AttestError) -> (CredentialCertificate, Bool, TrustAnchor) {
        var primaryRefusal: AttestError?
        for (anchor, chains) in zip(anchors, validators) {
            do {
                let leaf = try AttestationChecks.credentialCertificate(object, knownIntermediate: chains.verifiedIntermediate(matching:))
                return (leaf, try AttestationChecks.chain(leaf, chains: chains, at: time), anchor)
            } catch {
                primaryRefusal = primaryRefusal ?? error
            }
        }
        throw primaryRefusal ?? AttestError(.trustAnchor, "no trust anchor")
    }
}

/// The parsed credential certificate and what the later checks need from it.
struct CredentialCertificate {
    let certificate: Certificate
    let intermediate: Certificate
    /// The leaf's P-256 key as `04 || X || Y`.
    let point: [UInt8]
    /// The nonce from extension 1.2.840.113635.100.8.2.
    let nonce: [UInt8]
}

/// Each attestation check, named after what it proves.
enum AttestationChecks {
    /// `fmt` is exactly "apple-appattest" (not WebAuthn's "apple", "packed" or "none").
    static func format(_ object: AttestationObject) throws(AttestError) {
        guard object.format == "apple-appattest" else {
            throw AttestError(.fmt, "fmt is not apple-appattest")
        }
    }

    /// Step 1, shape: x5c is exactly [credential certificate, intermediate]; the first is an end
    /// entity with a P-256 key and exactly one well-formed, non-critical nonce extension.
    /// Why: a swapped [intermediate, leaf] order would otherwise pass path validation.
    static func credentialCertificate(
        _ object: AttestationObject, knownIntermediate: (_ der: [UInt8]) -> Certificate? = { _ in nil }
    ) throws(AttestError) -> CredentialCertificate {
        guard object.certificateChain.count == 2 else {
            throw AttestError(.x5cShape, "x5c holds \(object.certificateChain.count) certificates; exactly 2 are required")
        }
        let leaf: Certificate
        let intermediate: Certificate
        do {
            leaf = try Certificate(derEncoded: object.certificateChain[0])
            intermediate = try knownIntermediate(object.certificateChain[1]) ?? Certificate(derEncoded: object.certificateChain[1])
        } catch {
            throw AttestError(.certificateEncoding, "an x5c entry is not a DER certificate")
        }
        guard !leaf.isCertificateAuthority else {
            throw AttestError(.leafNotEndEntity, "x5c[0] is a CA certificate, not the credential certificate")
        }
        guard let key = try? leaf.publicKey, key.curve == .p256, let point = key.uncompressedPoint else {
            throw AttestError(.credentialKey, "the credential certificate's key is not an EC P-256 key")
        }
        let extensions = leaf.extensions(oid: NonceExtension.oid)
        guard extensions.count == 1, let nonceExtension = extensions.first else {
            throw AttestError(.nonceExtension, "the credential certificate has \(extensions.count) nonce extensions; exactly 1 is required")
        }
        guard !nonceExtension.isCritical else {
            throw AttestError(.nonceExtension, "the nonce extension is marked critical")
        }
        let nonce = try NonceExtension.nonce(fromExtensionValue: nonceExtension.value)
        return CredentialCertificate(certificate: leaf, intermediate: intermediate, point: point, nonce: nonce)
    }

    /// Step 1, path: leaf <- intermediate <- pinned root, validity checked at the given time.
    /// Returns whether the verified-intermediate cache served it.
    static func chain(_ leaf: CredentialCertificate, chains: ChainVerifier, at time: Int64) throws(AttestError) -> Bool {
        switch chains.verify(leaf: leaf.certificate, intermediate: leaf.intermediate, at: time) {
        case .trusted(let cached): return cached
        case .rejected(let failure, let detail): throw AttestError(.chainInvalid(failure), detail)
        }
    }

    /// Steps 2-4: nonce = SHA-256(authData || clientDataHash) equals the certificate's nonce,
    /// compared in constant time.
    static func nonce(_ object: AttestationObject, leaf: CredentialCertificate, clientDataHash: [UInt8]) throws(AttestError) {
        let expected = Digest.sha256(object.authenticatorData.rawBytes + clientDataHash)
        guard ConstantTime.equals(expected, leaf.nonce) else {
            throw AttestError(.nonceMismatch, "SHA-256(authData || clientDataHash) differs from the certificate's nonce")
        }
    }

    /// Step 5: SHA-256 of the credential certificate's public key point equals the key ID.
    static func keyID(_ leaf: CredentialCertificate, keyID: [UInt8]) throws(AttestError) {
        guard Digest.sha256(leaf.point) == keyID else {
            throw AttestError(.keyIDMismatch, "the key ID is not SHA-256 of the certificate's public key")
        }
    }

    /// Step 6: rpIdHash is SHA-256 of one of the accepted App IDs; returns that App ID.
    static func relyingParty(_ authData: AuthenticatorData, appIDs: [AppID]) throws(AttestError) -> AppID {
        guard let match = appIDs.first(where: { $0.rpIDHash == authData.rpIDHash }) else {
            throw AttestError(.rpIDMismatch, "rpIdHash matches none of the \(appIDs.count) accepted App IDs")
        }
        return match
    }

    /// Step 7: the counter of a fresh key is 0.
    static func counterIsZero(_ authData: AuthenticatorData) throws(AttestError) {
        guard authData.signCount == 0 else {
            throw AttestError(.counterNotZero, "attestation counter is \(authData.signCount), not 0")
        }
    }

    /// Step 8: the aaguid names production or development, and the integration accepts it.
    static func environment(
        _ authData: AuthenticatorData, allowed: Set<AppAttestEnvironment>
    ) throws(AttestError) -> AppAttestEnvironment {
        guard let credential = authData.attestedCredential,
            let environment = AppAttestEnvironment(aaguid: credential.aaguid)
        else { throw AttestError(.aaguid, "aaguid is neither appattest nor appattestdevelop") }
        guard allowed.contains(environment) else {
            throw AttestError(.environmentNotAllowed, "the \(environment.rawValue) environment is not accepted")
        }
        return environment
    }

    /// Step 9: the credential ID equals the key ID.
    static func credentialID(_ authData: AuthenticatorData, keyID: [UInt8]) throws(AttestError) {
        guard authData.attestedCredential?.credentialID == keyID else {
            throw AttestError(.credentialIDMismatch, "credentialId differs from the key ID")
        }
    }

    /// Extra (Apple does not list it; it costs nothing): the COSE key in authData is the
    /// certificate's key.
    static func credentialKey(_ authData: AuthenticatorData, leaf: CredentialCertificate) throws(AttestError) {
        guard authData.attestedCredential?.publicKey.uncompressedPoint == leaf.point else {
            throw AttestError(.credentialKeyMismatch, "the COSE key differs from the certificate's key")
        }
    }
}
