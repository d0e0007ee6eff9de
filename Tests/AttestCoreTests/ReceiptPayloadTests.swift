import AttestCore
import AttestCrypto
import AttestTesting
import Foundation
import Testing

/// DER writing for synthetic receipt payloads.
enum ReceiptDER {
    static func tlv(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
        if body.count < 0x80 { return [tag, UInt8(body.count)] + body }
        if body.count <= 0xFF { return [tag, 0x81, UInt8(body.count)] + body }
        return [tag, 0x82, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    static func integer(_ value: Int) -> [UInt8] {
        var bytes = withUnsafeBytes(of: UInt32(value).bigEndian) { Array($0) }
        while bytes.count > 1, bytes[0] == 0, bytes[1] < 0x80 { bytes.removeFirst() }
        return tlv(0x02, bytes)
    }

    static func field(_ type: Int, _ value: [UInt8]) -> [UInt8] { tlv(0x30, integer(type) + integer(1) + tlv(0x04, value)) }
    static func field(_ type: Int, _ text: String) -> [UInt8] { field(type, Array(text.utf8)) }
    static func set(_ fields: [[UInt8]]) -> [UInt8] { tlv(0x31, fields.flatMap { $0 }) }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, as Apple writes times.
    static func iso(_ seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds) + 0.25))
    }
}

/// A synthetic receipt world: a refreshed receipt signed by `ReceiptPKI`, verified against its root.
/// Each test changes exactly one thing from `fields()`.
struct ReceiptWorld {
    static let time: Int64 = 1_800_000_000
    static let created: Int64 = time - 3_600
    let pki: ReceiptPKI
    let verifier: ReceiptVerifier
    let appID: AppID
    let leaf: [UInt8]

    init(marker: Bool = true) throws {
        pki = try ReceiptPKI(time: Self.time, marker: marker)
        verifier = ReceiptVerifier(anchor: .custom(pki.root))
        appID = try AppID("ABCDE12345.com.example.messages")
        leaf = pki.intermediate.derBytes  // any DER bytes: field 3 is compared, not parsed
    }

    /// The fields in Apple's order for a refreshed receipt (17 and 6 first: not DER SET order).
    func fields(
        type: String = "RECEIPT", environment: String? = "sandbox", created: String? = nil, expires: String? = nil,
        notBefore: String? = nil, risk: [UInt8]? = Array("5".utf8)
    ) -> [Int: [UInt8]] {
        var fields: [Int: [UInt8]] = [
            2: Array(appID.description.utf8), 3: leaf, 4: [UInt8](repeating: 0xAB, count: 54), 5: [UInt8](repeating: 0x11, count: 88),
            6: Array(type.utf8), 12: Array((created ?? ReceiptDER.iso(Self.created)).utf8),
            19: Array((notBefore ?? ReceiptDER.iso(Self.created + 86_400)).utf8),
            21: Array((expires ?? ReceiptDER.iso(Self.created + 90 * 86_400)).utf8),
        ]
        if let environment { fields[7] = Array(environment.utf8) }
        if let risk { fields[17] = risk }
        return fields
    }

    func payload(_ fields: [Int: [UInt8]]) -> [UInt8] { ReceiptDER.set(encoded(fields)) }

    /// Each field's SEQUENCE, in Apple's order, then unknown fields by number.
    func encoded(_ fields: [Int: [UInt8]]) -> [[UInt8]] {
        let order = [17, 6, 2, 3, 4, 5, 7, 12, 19, 21]
        let others = fields.keys.filter { !order.contains($0) }.sorted()
        return (order + others).compactMap { type in fields[type].map { ReceiptDER.field(type, $0) } }
    }

    func input(_ receipt: [UInt8], time: Int64 = ReceiptWorld.time) -> ReceiptInput {
        ReceiptInput(receipt: receipt, appID: appID, certificate: leaf, expectedType: nil, time: time)
    }

    func verify(content: [UInt8], form: CMSSignatureForm = .content) throws -> VerifiedReceipt {
        try verifier.verify(input(try pki.sign(content, form: form)))
    }

    func expectRefusal(
        _ code: AttestError.Code, content: [UInt8], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let receipt = try pki.sign(content)
        #expect(throws: AttestError(code, ""), sourceLocation: sourceLocation) { try verifier.verify(input(receipt)) }
    }
}

@Suite("Synthetic receipts: the signature forms and the signer")
struct ReceiptSignatureTests {
    @Test("a well-formed synthetic receipt verifies and reads every field")
    func baseline() throws {
        let world = try ReceiptWorld()
        let verified = try world.verify(content: world.payload(world.fields()))
        #expect(verified.type == .receipt)
        #expect(verified.environment == .development)
        #expect(verified.createdAt == ReceiptWorld.created)
        #expect(verified.notBefore == ReceiptWorld.created + 86_400)
        #expect(verified.expiresAt == ReceiptWorld.created + 90 * 86_400)
        #expect(verified.riskMetric == 5)
        #expect(verified.token == [UInt8](repeating: 0x11, count: 88))
        #expect(verified.certificateSHA256 == Digest.sha256(world.leaf))
        #expect(verified.signatureForm == .content)
    }

    @Test("RFC 5652 signed attributes verify, and a flipped signature byte is refused")
    func signedAttributes() throws {
        let world = try ReceiptWorld()
        let content = world.payload(world.fields())
        #expect(try world.verify(content: content, form: .signedAttributes).signatureForm == .signedAttributes)
        var receipt = try world.pki.sign(content, form: .signedAttributes)
        receipt[try #require(Receipts.signatureByte(receipt))] ^= 0x01
        #expect(throws: AttestError(.receiptSignature, "")) { try world.verifier.verify(world.input(receipt)) }
    }

    @Test("signed attributes over a raw-content signature (the early form) verify, reported as such")
    func contentDespiteSignedAttributes() throws {
        let world = try ReceiptWorld()
        let content = world.payload(world.fields())
        let verified = try world.verify(content: content, form: .contentDespiteSignedAttributes)
        #expect(verified.signatureForm == .contentDespiteSignedAttributes)
        #expect(verified.riskMetric == 5)
    }

    @Test("the early form with a flipped signature byte is refused")
    func contentDespiteSignedAttributesTampered() throws {
        let world = try ReceiptWorld()
        var receipt = try world.pki.sign(world.payload(world.fields()), form: .contentDespiteSignedAttributes)
        receipt[try #require(Receipts.signatureByte(receipt))] ^= 0x01
        #expect(throws: AttestError(.receiptSignature, "")) { try world.verifier.verify(world.input(receipt)) }
    }

    @Test("the early form still needs the signer's path to the anchor")
    func contentDespiteSignedAttributesOtherRoot() throws {
        let world = try ReceiptWorld()
        let receipt = try world.pki.sign(world.payload(world.fields()), form: .contentDespiteSignedAttributes)
        let other = try ReceiptPKI(time: ReceiptWorld.time)
        // OpenSSL finds the other root by name; its key did not sign this intermediate.
        #expect(throws: AttestError(.receiptChainInvalid(.signatureInvalid), "")) {
            try ReceiptVerifier(anchor: .custom(other.root)).verify(world.input(receipt))
        }
    }

    @Test("a signer without Apple's receipt-signing extension is refused, whatever its path")
    func signerMarker() throws {
        let world = try ReceiptWorld(marker: false)
        try world.expectRefusal(.receiptSigner, content: world.payload(world.fields()))
    }

    @Test("the signer's certificate validity bounds the verification time")
    func signerValidity() throws {
        let world = try ReceiptWorld()
        let receipt = try world.pki.sign(world.payload(world.fields()))
        let notAfter = try #require(world.pki.signer.notAfter)
        #expect(throws: AttestError(.receiptChainInvalid(.expired), "")) {
            try world.verifier.verify(world.input(receipt, time: notAfter + 1))
        }
        let notBefore = try #require(world.pki.signer.notBefore)
        #expect(throws: AttestError(.receiptChainInvalid(.notYetValid), "")) {
            try world.verifier.verify(world.input(receipt, time: notBefore - 1))
        }
    }

    @Test("a second signer is refused")
    func twoSigners() throws {
        let world = try ReceiptWorld()
        let receipt = try world.pki.sign(world.payload(world.fields()), otherSigners: [try world.pki.anotherSigner()])
        #expect(throws: AttestError(.receiptCMS, "")) { try world.verifier.verify(world.input(receipt)) }
    }

    @Test("detached content is refused")
    func detached() throws {
        let world = try ReceiptWorld()
        let receipt = try world.pki.sign(world.payload(world.fields()), detached: true)
        #expect(throws: AttestError(.receiptCMS, "")) { try world.verifier.verify(world.input(receipt)) }
    }

    @Test("an encapsulated content type other than id-data is refused")
    func contentType() throws {
        let world = try ReceiptWorld()
        let receipt = try world.pki.sign(world.payload(world.fields()), contentType: "1.2.840.113549.1.9.16.1.4")
        #expect(throws: AttestError(.receiptCMS, "")) { try world.verifier.verify(world.input(receipt)) }
    }
}

/// One payload change and what it must give.
struct PayloadCase: Sendable, CustomTestStringConvertible {
    let name: String
    let expected: AttestError.Code?
    let change: @Sendable (ReceiptWorld) -> [UInt8]

    var testDescription: String { name }

    static let all: [PayloadCase] = structure + fields

    static let structure: [PayloadCase] = [
        .init(name: "a SEQUENCE instead of the SET", expected: .receiptPayload) { world in
            var bytes = world.payload(world.fields())
            bytes[0] = 0x30
            return bytes
        },
        .init(name: "a byte after the SET", expected: .receiptPayload) { world in world.payload(world.fields()) + [0x00] },
        .init(name: "a fourth member in a field", expected: .receiptPayload) { world in
            ReceiptDER.set([
                ReceiptDER.tlv(0x30, ReceiptDER.integer(2) + ReceiptDER.integer(1) + ReceiptDER.tlv(0x04, []) + ReceiptDER.integer(0))
            ])
        },
        .init(name: "a value that is not an OCTET STRING", expected: .receiptPayload) { world in
            var fields = world.fields().filter { $0.key != 7 }.map { ReceiptDER.field($0.key, $0.value) }
            fields.append(ReceiptDER.tlv(0x30, ReceiptDER.integer(7) + ReceiptDER.integer(1) + ReceiptDER.tlv(0x0C, Array("sandbox".utf8))))
            return ReceiptDER.set(fields)
        },
        .init(name: "a non-minimal length", expected: .receiptPayload) { world in
            var fields = world.fields().filter { $0.key != 6 }.map { ReceiptDER.field($0.key, $0.value) }
            fields.append([0x30, 0x81, 0x0F] + ReceiptDER.integer(6) + ReceiptDER.integer(1) + ReceiptDER.tlv(0x04, Array("RECEIPT".utf8)))
            return ReceiptDER.set(fields)
        },
        .init(name: "a length beyond the bytes present", expected: .receiptPayload) { world in
            var bytes = world.payload(world.fields())
            bytes.removeLast()
            return bytes
        },
        .init(name: "a non-minimal INTEGER type", expected: .receiptPayload) { world in
            var fields = world.fields().filter { $0.key != 6 }.map { ReceiptDER.field($0.key, $0.value) }
            fields.append(
                ReceiptDER.tlv(0x30, [0x02, 0x02, 0x00, 0x06] + ReceiptDER.integer(1) + ReceiptDER.tlv(0x04, Array("RECEIPT".utf8))))
            return ReceiptDER.set(fields)
        },
        .init(name: "a negative type", expected: .receiptPayload) { world in
            ReceiptDER.set(
                world.encoded(world.fields()) + [
                    ReceiptDER.tlv(0x30, [0x02, 0x01, 0xFF] + ReceiptDER.integer(1) + ReceiptDER.tlv(0x04, []))
                ])
        },
        .init(name: "field 2 twice", expected: .receiptPayload) { world in
            ReceiptDER.set(world.encoded(world.fields()) + [ReceiptDER.field(2, world.appID.description)])
        },
        .init(name: "no field 21", expected: .receiptPayload) { world in world.payload(world.fields().filter { $0.key != 21 }) },
        .init(name: "no field 12", expected: .receiptPayload) { world in world.payload(world.fields().filter { $0.key != 12 }) },
        .init(name: "no field 6", expected: .receiptPayload) { world in world.payload(world.fields().filter { $0.key != 6 }) },
        .init(name: "no field 3", expected: .receiptPayload) { world in world.payload(world.fields().filter { $0.key != 3 }) },
        .init(name: "no field 2", expected: .receiptPayload) { world in world.payload(world.fields().filter { $0.key != 2 }) },
        .init(name: "an unknown field 99 (skipped)", expected: nil) { world in
            var fields = world.fields()
            fields[99] = [1, 2, 3]
            return world.payload(fields)
        },
        .init(name: "no field 4 and 5 (never checked)", expected: nil) { world in
            world.payload(world.fields().filter { ![4, 5].contains($0.key) })
        },
    ]

    static let fields: [PayloadCase] = [
        .init(name: "type ATTEST", expected: nil) { world in world.payload(world.fields(type: "ATTEST")) },
        .init(name: "type attest", expected: .receiptType) { world in world.payload(world.fields(type: "attest")) },
        .init(name: "type RECEIPT with a trailing space", expected: .receiptType) { world in world.payload(world.fields(type: "RECEIPT "))
        },
        .init(name: "environment production", expected: nil) { world in world.payload(world.fields(environment: "production")) },
        .init(name: "environment absent", expected: nil) { world in world.payload(world.fields(environment: nil)) },
        .init(name: "environment staging", expected: .receiptField) { world in world.payload(world.fields(environment: "staging")) },
        .init(name: "risk metric absent", expected: nil) { world in world.payload(world.fields(risk: nil)) },
        .init(name: "risk metric as a DER INTEGER", expected: .receiptField) { world in
            world.payload(world.fields(risk: [0x02, 0x01, 0x05]))
        },
        .init(name: "risk metric as a raw byte", expected: .receiptField) { world in world.payload(world.fields(risk: [0x05])) },
        .init(name: "risk metric -1", expected: .receiptField) { world in world.payload(world.fields(risk: Array("-1".utf8))) },
        .init(name: "risk metric empty", expected: .receiptField) { world in world.payload(world.fields(risk: [])) },
        .init(name: "risk metric of 10 digits", expected: .receiptField) { world in
            world.payload(world.fields(risk: Array("1234567890".utf8)))
        },
        .init(name: "creation time with 1 fraction digit", expected: nil) { world in
            world.payload(world.fields(created: "2027-01-15T07:00:00.5Z"))
        },
        .init(name: "creation time without fraction", expected: nil) { world in world.payload(world.fields(created: "2027-01-15T07:00:00Z"))
        },
        .init(name: "creation time with 4 fraction digits", expected: .receiptField) { world in
            world.payload(world.fields(created: "2027-01-15T07:00:00.1234Z"))
        },
        .init(name: "creation time with an empty fraction", expected: .receiptField) { world in
            world.payload(world.fields(created: "2027-01-15T07:00:00.Z"))
        },
        .init(name: "creation time with an offset", expected: .receiptField) { world in
            world.payload(world.fields(created: "2027-01-15T07:00:00.123+00:00"))
        },
        .init(name: "creation time with a space", expected: .receiptField) { world in
            world.payload(world.fields(created: "2027-01-15 07:00:00.123Z"))
        },
        .init(name: "creation time in month 13", expected: .receiptField) { world in
            world.payload(world.fields(created: "2027-13-15T07:00:00.123Z"))
        },
        .init(name: "creation time on February 29 of 2027", expected: .receiptField) { world in
            world.payload(world.fields(created: "2027-02-29T07:00:00.123Z"))
        },
        .init(name: "creation time at 24:00", expected: .receiptField) { world in
            world.payload(world.fields(created: "2027-01-15T24:00:00.123Z"))
        },
        .init(name: "creation time with a letter", expected: .receiptField) { world in
            world.payload(world.fields(created: "2027-01-1aT07:00:00.123Z"))
        },
        .init(name: "creation time with a colon for a month digit", expected: .receiptField) { world in
            world.payload(world.fields(created: "2027-0:-15T07:00:00.123Z"))
        },
        .init(name: "creation time ending in X instead of Z", expected: .receiptField) { world in
            world.payload(world.fields(created: "2027-01-15T07:00:00.123X"))
        },
        .init(name: "expiration time malformed", expected: .receiptField) { world in world.payload(world.fields(expires: "tomorrow")) },
        .init(name: "not-before malformed", expected: .receiptField) { world in world.payload(world.fields(notBefore: "2027-01-16")) },
        .init(name: "not-before after the verification time (never checked)", expected: nil) { world in
            world.payload(world.fields(notBefore: ReceiptDER.iso(ReceiptWorld.time + 86_400)))
        },
        .init(name: "expiration time at the verification second", expected: .receiptExpired) { world in
            world.payload(world.fields(expires: ReceiptDER.iso(ReceiptWorld.time)))
        },
        .init(name: "expiration time one second after the verification time", expected: nil) { world in
            world.payload(world.fields(expires: ReceiptDER.iso(ReceiptWorld.time + 1)))
        },
        .init(name: "field 2 with another bundle ID", expected: .receiptAppID) { world in
            var fields = world.fields()
            fields[2] = Array("ABCDE12345.com.example.other".utf8)
            return world.payload(fields)
        },
        .init(name: "field 3 with one byte more", expected: .receiptCertificate) { world in
            var fields = world.fields()
            fields[3] = world.leaf + [0x00]
            return world.payload(fields)
        },
    ]
}

@Suite("Synthetic receipts: the payload (each changes one thing)")
struct ReceiptPayloadTests {
    @Test("each payload change gives its code, or verifies", arguments: PayloadCase.all)
    func payload(_ testCase: PayloadCase) throws {
        let world = try ReceiptWorld()
        let content = testCase.change(world)
        if let code = testCase.expected {
            try world.expectRefusal(code, content: content)
        } else {
            _ = try world.verify(content: content)
        }
    }

    @Test("checkContent, attest-fuzz's way past the signature, answers each payload change as verify does", arguments: PayloadCase.all)
    func checkContent(_ testCase: PayloadCase) throws {
        let world = try ReceiptWorld()
        let content = testCase.change(world)
        let input = world.input(content)
        if let code = testCase.expected {
            #expect(throws: AttestError(code, "")) { try ReceiptPayload(content: content).checkContent(against: input) }
        } else {
            try ReceiptPayload(content: content).checkContent(against: input)
        }
    }

    @Test("fraction digits are dropped, not rounded")
    func fractionDropped() throws {
        let world = try ReceiptWorld()
        let verified = try world.verify(content: world.payload(world.fields(created: "2027-01-15T07:00:00.999Z")))
        #expect(verified.createdAt == 1_799_996_400)
    }
}
