import AttestCore
import AttestCrypto
import AttestTesting
import Foundation
import Testing

extension RecordedCase: CustomTestStringConvertible {
    package var testDescription: String { id }
}

/// Shared by the recorded suites: one verifier pinned to Apple's embedded root.
enum Recorded {
    static let verifier: AttestationVerifier? = try? AttestationVerifier(anchor: TrustAnchor.appleAppAttestationRoot())
    static let cases: [RecordedCase] = (try? Fixtures.recordedCases()) ?? []
    static let completeAttestations = cases.filter { $0.kind.hasPrefix("attestation") && !$0.isPartial }
    static let partialAttestations = cases.filter { $0.kind == "attestation" && $0.isPartial }
    static let verifiableAssertions = cases.filter { $0.kind == "assertion" && $0.expectedResult == "valid" }

    /// The CBOR object, assembled from its parts for `*-components` cases (receipt empty).
    static func object(_ recorded: RecordedCase) -> [UInt8]? {
        if let object = recorded.object { return object }
        guard let leaf = RecordedCase.bytes(recorded.leafCertDERB64),
            let intermediate = RecordedCase.bytes(recorded.intermediateCertDERB64),
            let authData = RecordedCase.bytes(recorded.authDataB64)
        else { return nil }
        return CBORValue.map([
            CBORMapEntry(key: .text("fmt"), value: .text("apple-appattest")),
            CBORMapEntry(
                key: .text("attStmt"),
                value: .map([
                    CBORMapEntry(key: .text("x5c"), value: .array([.bytes(leaf), .bytes(intermediate)])),
                    CBORMapEntry(key: .text("receipt"), value: .bytes([])),
                ])),
            CBORMapEntry(key: .text("authData"), value: .bytes(authData)),
        ]).encoded
    }

    static func input(_ recorded: RecordedCase, at time: Int64? = nil, clientDataHash: [UInt8]? = nil) throws -> AttestationInput {
        AttestationInput(
            object: try #require(object(recorded)), keyID: try #require(recorded.keyID),
            clientDataHash: try #require(clientDataHash ?? recorded.clientDataHash),
            appIDs: [try AppID(teamID: recorded.teamID, bundleID: recorded.bundleID)],
            allowedEnvironments: Set(AppAttestEnvironment.allCases), time: try #require(time ?? recorded.verifyAtUnix))
    }
}

@Suite("Attestations recorded from real devices")
struct RecordedAttestationTests {
    @Test("the fixtures hold 37 cases: 20 complete attestations, 3 partial, 13 verifiable assertions, 1 broken")
    func inventory() {
        #expect(Recorded.cases.count == 37)
        #expect(Recorded.completeAttestations.count == 20)
        #expect(Recorded.partialAttestations.count == 3)
        #expect(Recorded.verifiableAssertions.count == 13)
    }

    @Test("the embedded Apple root is the pinned one and the only trusted certificate")
    func pinnedRoot() throws {
        let verifier = try #require(Recorded.verifier)
        #expect(verifier.anchor.isAppleRoot)
        #expect(verifier.anchor.certificate.sha256Fingerprint == TrustAnchor.appleRootFingerprint)
        #expect(verifier.chains.trustedObjectCount == 1)
        let fixtureRoot = try Certificate(
            pemEncoded: String(decoding: Fixtures.data("appattest/roots/apple_app_attestation_root_ca.pem"), as: UTF8.self))
        #expect(fixtureRoot.derBytes == verifier.anchor.certificate.derBytes)
    }

    @Test("full path validation runs without X509_STRICT or PARTIAL_CHAIN")
    func verificationFlags() throws {
        let verifier = try #require(Recorded.verifier)
        for (name, bit) in ChainVerifier.forbiddenFlags {
            #expect(verifier.chains.verificationFlags & bit == 0, "\(name) is set")
        }
    }

    @Test("accepts each recorded attestation at its recorded time", arguments: Recorded.completeAttestations)
    func acceptsAtRecordedTime(_ recorded: RecordedCase) throws {
        let verifier = try #require(Recorded.verifier)
        let result = try verifier.verify(Recorded.input(recorded))
        #expect(result.keyID == recorded.keyID)
        #expect(result.environment.rawValue == recorded.environment)
        #expect(result.appID.description == recorded.appID)
        let pem = try recorded.credentialPublicKeyPEM ?? recorded.publicKeyPEM ?? derivedKeyPEM(recorded)
        let expectedKey = try PublicKey(pem: pem)
        #expect(result.publicKey == expectedKey.uncompressedPoint)
        #expect(result.extensions == nil)
    }

    private func derivedKeyPEM(_ recorded: RecordedCase) throws -> String {
        let leaf = try Certificate(derEncoded: try #require(RecordedCase.bytes(recorded.leafCertDERB64)))
        return try leaf.publicKey.pem
    }

    @Test("rejects each recorded attestation as expired today", arguments: Recorded.completeAttestations)
    func expiredToday(_ recorded: RecordedCase) throws {
        let verifier = try #require(Recorded.verifier)
        let now = Int64(Date().timeIntervalSince1970)
        #expect(throws: AttestError(.chainInvalid(.expired), "")) { try verifier.verify(Recorded.input(recorded, at: now)) }
    }

    // OpenSSL's X509_cmp_time counts a certificate as expired from the second named in notAfter.
    @Test(
        "accepts each recorded attestation one second before notAfter and rejects it at notAfter", arguments: Recorded.completeAttestations)
    func expiredAtBoundary(_ recorded: RecordedCase) throws {
        let verifier = try #require(Recorded.verifier)
        let object = try #require(Recorded.object(recorded))
        let parsed = try AttestationObject(cbor: object)
        let leaf = try Certificate(derEncoded: parsed.certificateChain[0])
        let notAfter = try #require(leaf.notAfter)
        _ = try verifier.verify(Recorded.input(recorded, at: notAfter - 1))
        #expect(throws: AttestError(.chainInvalid(.expired), "")) { try verifier.verify(Recorded.input(recorded, at: notAfter)) }
    }

    @Test("rejects each recorded attestation with one bit of clientDataHash flipped", arguments: Recorded.completeAttestations)
    func flippedChallenge(_ recorded: RecordedCase) throws {
        let verifier = try #require(Recorded.verifier)
        var hash = try #require(recorded.clientDataHash)
        hash[0] ^= 0x01
        #expect(throws: AttestError(.nonceMismatch, "")) { try verifier.verify(Recorded.input(recorded, clientDataHash: hash)) }
    }

    @Test("rejects a production-only integration for development keys, and the reverse", arguments: Recorded.completeAttestations)
    func environmentPolicy(_ recorded: RecordedCase) throws {
        let verifier = try #require(Recorded.verifier)
        var input = try Recorded.input(recorded)
        let environment = try #require(AppAttestEnvironment(rawValue: recorded.environment ?? ""))
        input.allowedEnvironments = [environment]
        _ = try verifier.verify(input)
        input.allowedEnvironments = Set(AppAttestEnvironment.allCases).subtracting([environment])
        #expect(throws: AttestError(.environmentNotAllowed, "")) { try verifier.verify(input) }
    }

    @Test("checks partial cases (no recorded challenge) up to the nonce", arguments: Recorded.partialAttestations)
    func partialCases(_ recorded: RecordedCase) throws {
        let verifier = try #require(Recorded.verifier)
        let object = try #require(recorded.object)
        // Every check before the nonce passes (x5c shape, leaf shape, chain at the recorded time),
        // so the failure is exactly the nonce that cannot be reproduced.
        let input = try Recorded.input(recorded, clientDataHash: [UInt8](repeating: 0, count: 32))
        #expect(throws: AttestError(.nonceMismatch, "")) { try verifier.verify(input) }
        // The checks after the nonce, run on the parsed object.
        let parsed = try AttestationObject(cbor: object)
        let authData = parsed.authenticatorData
        let keyID = try #require(recorded.keyID)
        let leaf = try Certificate(derEncoded: parsed.certificateChain[0])
        #expect(Digest.sha256(try #require(try leaf.publicKey.uncompressedPoint)) == keyID)
        #expect(authData.rpIDHash == (try AppID(recorded.appID)).rpIDHash)
        #expect(authData.signCount == 0)
        #expect(authData.attestedCredential?.credentialID == keyID)
        #expect(
            AppAttestEnvironment(aaguid: authData.attestedCredential?.aaguid ?? [])
                == AppAttestEnvironment(rawValue: recorded.environment ?? ""))
        #expect(authData.attestedCredential?.publicKey.uncompressedPoint == (try leaf.publicKey.uncompressedPoint))
    }

    @Test("Apple's guide sample verifies only with the raw challenge taken as clientDataHash")
    func appleGuideSample() throws {
        let verifier = try #require(Recorded.verifier)
        let recorded = try Fixtures.recordedCase("apple_validation_guide_2024_attestation")
        let raw = Array("test_server_challenge".utf8)
        #expect(try #require(recorded.clientDataHash) == raw)
        _ = try verifier.verify(Recorded.input(recorded, clientDataHash: raw))
        #expect(throws: AttestError(.nonceMismatch, "")) {
            try verifier.verify(Recorded.input(recorded, clientDataHash: Digest.sha256(raw)))
        }
    }

    @Test("serves a repeated intermediate from the cache and still checks the leaf's validity")
    func intermediateCache() throws {
        let verifier = try AttestationVerifier(anchor: TrustAnchor.appleAppAttestationRoot())
        let first = try Fixtures.recordedCase("veehaitch_ios-14.4_attestation")
        let second = try Fixtures.recordedCase("veehaitch_ios-14.3_attestation")
        #expect(try verifier.verify(Recorded.input(first)).usedCachedIntermediate == false)
        #expect(try verifier.verify(Recorded.input(second)).usedCachedIntermediate == true)
        let now = Int64(Date().timeIntervalSince1970)
        #expect(throws: AttestError(.chainInvalid(.expired), "")) { try verifier.verify(Recorded.input(second, at: now)) }
    }
}

@Suite("Assertions recorded from real devices")
struct RecordedAssertionTests {
    @Test("accepts each recorded assertion with its paired attestation's key", arguments: Recorded.verifiableAssertions)
    func accepts(_ recorded: RecordedCase) throws {
        let key = try PublicKey(pem: try #require(recorded.publicKeyPEM))
        if let pairedID = recorded.pairedAttestationID {
            let paired = try Fixtures.recordedCase(pairedID)
            let verifier = try #require(Recorded.verifier)
            let attested = try verifier.verify(Recorded.input(paired))
            #expect(attested.publicKey == key.uncompressedPoint, "assertion key differs from the paired attestation's")
        }
        let result = try AssertionVerifier.verify(assertionInput(recorded, key: key))
        if let expected = recorded.expectedCounter {
            #expect(result.counter == expected)
        }
        #expect(result.counter > (recorded.previousCounter ?? 0))
    }

    @Test("rejects each recorded assertion replayed at its own counter", arguments: Recorded.verifiableAssertions)
    func replay(_ recorded: RecordedCase) throws {
        let key = try PublicKey(pem: try #require(recorded.publicKeyPEM))
        let counter = try AssertionVerifier.verify(assertionInput(recorded, key: key)).counter
        var input = try assertionInput(recorded, key: key)
        input.previousCounter = counter
        #expect(throws: AttestError(.counterNotIncreasing, "")) { try AssertionVerifier.verify(input) }
    }

    @Test("rejects each recorded assertion with clientDataHash changed", arguments: Recorded.verifiableAssertions)
    func flippedClientData(_ recorded: RecordedCase) throws {
        let key = try PublicKey(pem: try #require(recorded.publicKeyPEM))
        var input = try assertionInput(recorded, key: key)
        input.clientDataHash[31] ^= 0x80
        #expect(throws: AttestError(.signature, "")) { try AssertionVerifier.verify(input) }
    }

    @Test("rejects the appattest-rs example, which does not verify as recorded")
    func gandalf() throws {
        let recorded = try Fixtures.recordedCase("appattestrs_gandalf_assertion")
        let key = try PublicKey(pem: try #require(recorded.publicKeyPEM))
        #expect(throws: AttestError(.signature, "")) { try AssertionVerifier.verify(assertionInput(recorded, key: key)) }
    }

    private func assertionInput(_ recorded: RecordedCase, key: PublicKey) throws -> AssertionInput {
        AssertionInput(
            object: try #require(recorded.object), clientDataHash: try #require(recorded.clientDataHash), publicKey: key,
            appIDs: [try AppID(teamID: recorded.teamID, bundleID: recorded.bundleID)],
            previousCounter: recorded.previousCounter ?? 0)
    }
}
