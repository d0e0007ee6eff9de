import AttestCrypto
import AttestTesting
import Foundation
import Testing

/// One Wycheproof ECDSA verification vector with its group's key and hash.
struct WycheproofVector: Sendable, CustomTestStringConvertible {
    let file: String
    let tcId: Int
    let keyDER: [UInt8]
    let digest: DigestAlgorithm
    let message: [UInt8]
    let signature: [UInt8]
    let valid: Bool
    var testDescription: String { "\(file)#\(tcId)" }
}

private struct WycheproofFile: Decodable {
    struct Group: Decodable {
        let publicKeyDer: String
        let sha: String
        let tests: [Test]
    }
    struct Test: Decodable {
        let tcId: Int
        let msg: String
        let sig: String
        let result: String
    }
    let testGroups: [Group]
}

enum Wycheproof {
    static func vectors(_ file: String) -> [WycheproofVector] {
        guard let data = try? Fixtures.data("wycheproof/\(file)"),
            let parsed = try? JSONDecoder().decode(WycheproofFile.self, from: data)
        else { return [] }
        return parsed.testGroups.flatMap { group in
            group.tests.map { test in
                WycheproofVector(
                    file: file, tcId: test.tcId, keyDER: Hex.decode(group.publicKeyDer) ?? [],
                    digest: group.sha == "SHA-384" ? .sha384 : .sha256, message: Hex.decode(test.msg) ?? [],
                    signature: Hex.decode(test.sig) ?? [],
                    // "acceptable" vectors do not occur in these files; the count test pins that.
                    valid: test.result == "valid")
            }
        }
    }
}

@Suite("Wycheproof ECDSA vectors through the verifier's signature function")
struct WycheproofTests {
    static let p256Vectors = Wycheproof.vectors("ecdsa_secp256r1_sha256_test.json")
    static let p384sha256Vectors = Wycheproof.vectors("ecdsa_secp384r1_sha256_test.json")
    static let p384sha384Vectors = Wycheproof.vectors("ecdsa_secp384r1_sha384_test.json")

    @Test("the files hold 484, 472 and 504 vectors with 174, 162 and 194 valid")
    func counts() {
        #expect(Self.p256Vectors.count == 484)
        #expect(Self.p256Vectors.filter(\.valid).count == 174)
        #expect(Self.p384sha256Vectors.count == 472)
        #expect(Self.p384sha256Vectors.filter(\.valid).count == 162)
        #expect(Self.p384sha384Vectors.count == 504)
        #expect(Self.p384sha384Vectors.filter(\.valid).count == 194)
    }

    @Test("P-256 / SHA-256 through PublicKey.verifySignature (the assertion signature path)", arguments: p256Vectors)
    func p256(_ vector: WycheproofVector) throws { try check(vector) }

    @Test(
        "P-384 / SHA-256 through PublicKey.verifySignature (the algorithm of the credential certificate's signature; the certificate path itself is OpenSSL's X509_verify_cert)",
        arguments: p384sha256Vectors)
    func p384WithSHA256(_ vector: WycheproofVector) throws { try check(vector) }

    @Test("P-384 / SHA-384 through PublicKey.verifySignature (the algorithm of the intermediate's signature)", arguments: p384sha384Vectors)
    func p384WithSHA384(_ vector: WycheproofVector) throws { try check(vector) }

    private func check(_ vector: WycheproofVector) throws {
        let key = try PublicKey(spkiDER: vector.keyDER)
        #expect(key.verifySignature(vector.signature, over: vector.message, digest: vector.digest) == vector.valid)
    }
}

@Suite("OpenSSL wrapper")
struct CryptoWrapperTests {
    @Test("rejects an uncompressed point that is not on the curve")
    func offCurvePoint() throws {
        var point = try #require(try PrivateKey.generate(.p256).publicKey.uncompressedPoint)
        point[64] ^= 0x01
        #expect(throws: CryptoError(.invalidPublicKey, "")) { try PublicKey(uncompressedPoint: point, curve: .p256) }
    }

    @Test("round-trips a key through its uncompressed point and PEM")
    func keyRoundTrip() throws {
        let key = try PrivateKey.generate(.p256).publicKey
        let point = try #require(key.uncompressedPoint)
        #expect(try PublicKey(uncompressedPoint: point, curve: .p256).spkiDER == key.spkiDER)
        #expect(try PublicKey(pem: key.pem).spkiDER == key.spkiDER)
        #expect(key.curve == .p256)
    }

    @Test("rejects a certificate followed by trailing bytes")
    func certificateTrailingBytes() throws {
        let key = try PrivateKey.generate(.p256)
        let certificate = try CertificateBuilder.issue(
            CertificateTemplate(commonName: "t", notBefore: 0, notAfter: 100), subjectKey: try key.publicKey, issuer: nil, issuerKey: key)
        #expect(throws: CryptoError(.invalidCertificate, "")) { try Certificate(derEncoded: certificate.derBytes + [0]) }
    }

    @Test("compares in constant time and still tells equal from different")
    func constantTime() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
    }

    @Test("reads certificate times as UTC Unix seconds")
    func civilTime() {
        #expect(CivilTime.unixSeconds(year: 2045, month: 3, day: 15, hour: 0, minute: 0, second: 0) == 2_373_148_800)
        #expect(CivilTime.unixSeconds(year: 1970, month: 1, day: 1, hour: 0, minute: 0, second: 0) == 0)
    }
}

@Suite("Strict base64 (RFC 4648)")
struct Base64TextTests {
    @Test("round-trips every length from 0 to 64 in both alphabets")
    func roundTrip() {
        for length in 0...64 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64Text.decode(Base64Text.encode(bytes, .standard), .standard) == bytes)
            #expect(Base64Text.decode(Base64Text.encode(bytes, .url), .url) == bytes)
        }
    }

    @Test("matches RFC 4648 section 10 test vectors")
    func vectors() {
        let cases = ["": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in cases {
            #expect(Base64Text.encode(Array(plain.utf8)) == encoded)
            #expect(Base64Text.decode(encoded) == Array(plain.utf8))
            #expect(Base64Text.encode(Array(plain.utf8), .url) == encoded.replacingOccurrences(of: "=", with: ""))
        }
    }

    @Test(
        "refuses non-canonical text: whitespace, the other alphabet, wrong padding, stray bits",
        arguments: [
            ("Zm9v Yg==", Base64Text.Alphabet.standard), ("Zm9vYg=", .standard), ("Zm9vYg", .standard), ("Zm9vYh==", .standard),
            ("_-8=", .standard), ("Zm9vYg==", .url), ("+/8", .url), ("Zm9vY", .url), ("Zm9vYh", .url), ("Zg==\n", .standard),
            ("====", .standard), ("Z===", .standard),
        ])
    func refuses(_ text: String, _ alphabet: Base64Text.Alphabet) {
        #expect(Base64Text.decode(text, alphabet) == nil)
    }
}

@Suite("The JSON writer")
struct JSONTextTests {
    @Test("writes nil optionals as null and present ones as their value")
    func optionals() {
        let missing: Int? = nil
        let present: Int? = 3
        let name: String? = "a"
        #expect(JSONText.object([("a", missing), ("b", present), ("c", name)]) == #"{"a":null,"b":3,"c":"a"}"#)
    }

    @Test("escapes what JSON requires, and pretty-prints nested values")
    func escapingAndPretty() {
        #expect(JSONText.object([("k", "q\"\\\n\u{1}")]) == #"{"k":"q\"\\\n\u0001"}"#)
        #expect(JSONText.render(.object([("a", [String]())]), pretty: true) == "{\n  \"a\" : []\n}")
    }
}
