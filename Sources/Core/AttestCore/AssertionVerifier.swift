package import AttestCrypto

/// Everything one assertion is verified against.
package struct AssertionInput: Sendable {
    /// The CBOR assertion object.
    package var object: [UInt8]
    /// SHA-256 of the exact client data bytes the app signed.
    package var clientDataHash: [UInt8]
    /// The device key registered at attestation.
    package var publicKey: PublicKey
    /// The App IDs the integration accepts.
    package var appIDs: [AppID]
    /// The stored counter; the assertion's must be strictly greater.
    package var previousCounter: UInt32

    package init(object: [UInt8], clientDataHash: [UInt8], publicKey: PublicKey, appIDs: [AppID], previousCounter: UInt32) {
        (self.object, self.clientDataHash, self.publicKey, self.appIDs, self.previousCounter) = (
            object, clientDataHash, publicKey, appIDs, previousCounter
        )
    }
}

/// An assertion that passed every check. Only `AssertionVerifier` can make one.
package struct VerifiedAssertion: Sendable {
    /// The new counter to store (with a compare-and-set against `previousCounter`).
    package let counter: UInt32
    package let appID: AppID
    package let extensions: AuthenticatorExtensions?
}

/// Verifies App Attest assertions.
package enum AssertionVerifier {
    /// DER ECDSA P-256 signatures are 8 to 72 bytes.
    static let signatureLengths = 8...72

    /// Parses the object and checks its shape (CBOR, keys, authenticator data, signature
    /// length): everything that needs no key, so a caller can refuse malformed input before it
    /// looks a device up and the answer cannot depend on whether the key is registered.
    package static func parse(_ bytes: [UInt8]) throws(AttestError) -> AssertionObject {
        let object = try AssertionObject(cbor: bytes)
        try AssertionChecks.signatureShape(object)
        return object
    }

    /// Runs every check in order; the first failure is thrown.
    package static func verify(_ input: AssertionInput) throws(AttestError) -> VerifiedAssertion {
        guard input.publicKey.curve == .p256 else {
            throw AttestError(.invalidPublicKey, "the registered key is not an EC P-256 key")
        }
        let object = try parse(input.object)
        let authData = object.authenticatorData
        try AssertionChecks.signature(object, clientDataHash: input.clientDataHash, key: input.publicKey)
        let appID = try AttestationChecks.relyingParty(authData, appIDs: input.appIDs)
        try AssertionChecks.counterIncreases(authData, previous: input.previousCounter)
        return VerifiedAssertion(counter: authData.signCount, appID: appID, extensions: authData.extensions)
    }
}

/// Each assertion check, named after what it proves.
enum AssertionChecks {
    /// Steps 1-3: the signature is ECDSA P-256 with SHA-256 over nonce = SHA-256(authData ||
    /// clientDataHash). The ECDSA primitive therefore sees SHA-256(nonce): devices sign the
    /// nonce as a message, not as a digest (the trap several public verifiers fell into).
    static func signature(_ object: AssertionObject, clientDataHash: [UInt8], key: PublicKey) throws(AttestError) {
        let nonce = Digest.sha256(object.authenticatorData.rawBytes + clientDataHash)
        guard key.verifySignature(object.signature, over: nonce, digest: .sha256) else {
            throw AttestError(.signature, "the signature does not verify with the registered key")
        }
    }

    /// The signature is long enough to be a DER ECDSA P-256 signature (checked at parse time).
    static func signatureShape(_ object: AssertionObject) throws(AttestError) {
        guard AssertionVerifier.signatureLengths.contains(object.signature.count) else {
            throw AttestError(.signatureEncoding, "signature is \(object.signature.count) bytes; DER ECDSA P-256 takes 8 to 72")
        }
    }

    /// Step 5: the counter is strictly greater than the stored one (unsigned 32-bit; gaps are normal).
    static func counterIncreases(_ authData: AuthenticatorData, previous: UInt32) throws(AttestError) {
        guard authData.signCount > previous else {
            throw AttestError(.counterNotIncreasing, "counter \(authData.signCount) is not greater than the stored \(previous)")
        }
    }
}
