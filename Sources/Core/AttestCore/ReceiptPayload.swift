import AttestCrypto

/// The fields of an App Attest receipt's signed content that attestd reads, by type number.
enum ReceiptField: Int, CaseIterable {
    case appID = 2
    case certificate = 3
    case clientHash = 4
    case token = 5
    case type = 6
    case environment = 7
    case creationTime = 12
    case riskMetric = 17
    case notBefore = 19
    case expirationTime = 21
}

/// The receipt's content: `SET OF SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`,
/// read as strict DER (definite minimal lengths, minimal INTEGERs, nothing after the SET or inside
/// a SEQUENCE after its three members).
///
/// Deliberately not enforced: the DER ordering of SET OF elements (Apple's refreshed receipts
/// start with field 17, then 6, then 2) and the version numbers (always 1 so far; a new version of
/// a field is still its value). Unknown field types are skipped; a second copy of a field attestd
/// reads is refused, so that no reader can pick a different copy than the verifier did.
package struct ReceiptPayload {
    /// The value of each field attestd reads that is present.
    let values: [ReceiptField: [UInt8]]

    /// Parses signed content; nothing is trusted until `ReceiptVerifier` has checked the signature.
    package init(content: [UInt8]) throws(AttestError) {
        var rest = try DERReader.single(content[...], tag: 0x31, code: .receiptPayload)
        var values: [ReceiptField: [UInt8]] = [:]
        while !rest.isEmpty {
            let (sequence, after) = try DERReader.element(rest, tag: 0x30, code: .receiptPayload)
            rest = after
            let (typeBytes, afterType) = try DERReader.element(sequence, tag: 0x02, code: .receiptPayload)
            let (versionBytes, afterVersion) = try DERReader.element(afterType, tag: 0x02, code: .receiptPayload)
            let value = try DERReader.single(afterVersion, tag: 0x04, code: .receiptPayload)
            let type = try DERReader.nonNegativeInteger(typeBytes, code: .receiptPayload)
            _ = try DERReader.nonNegativeInteger(versionBytes, code: .receiptPayload)
            guard let field = ReceiptField(rawValue: type) else { continue }
            guard values[field] == nil else {
                throw AttestError(.receiptPayload, "field \(type) occurs more than once")
            }
            values[field] = Array(value)
        }
        self.values = values
    }

    /// The content checks that follow the signature in `ReceiptVerifier.verify`, in its order: type,
    /// App ID, certificate, environment, times, expiry, risk metric. Only the verifier may call it
    /// on content whose signature it has verified, which is why the result is internal.
    func verified(against input: ReceiptInput, form: CMSSignatureForm) throws(AttestError) -> VerifiedReceipt {
        let type = try ReceiptChecks.type(self, expected: input.expectedType)
        try ReceiptChecks.appID(self, appID: input.appID)
        let certificate = try required(.certificate)
        try ReceiptChecks.certificate(certificate, expected: input.certificate)
        let environment = try ReceiptChecks.environment(self)
        let times = try ReceiptChecks.times(self)
        try ReceiptChecks.notExpired(expiresAt: times.expiresAt, at: input.time)
        return VerifiedReceipt(
            type: type, appID: input.appID, environment: environment, createdAt: times.createdAt, notBefore: times.notBefore,
            expiresAt: times.expiresAt, riskMetric: try ReceiptChecks.riskMetric(self), certificateSHA256: Digest.sha256(certificate),
            token: values[.token], signatureForm: form)
    }

    /// Runs the content checks of `verified(against:form:)` and drops the result: for `attest-fuzz`,
    /// which cannot forge a signature to reach them through `ReceiptVerifier.verify`. Passing proves
    /// nothing about who wrote the content.
    package func checkContent(against input: ReceiptInput) throws(AttestError) {
        _ = try verified(against: input, form: .signedAttributes)
    }

    /// The value of a field the receipt must have.
    func required(_ field: ReceiptField) throws(AttestError) -> [UInt8] {
        guard let value = values[field] else {
            throw AttestError(.receiptPayload, "field \(field.rawValue) is missing")
        }
        return value
    }
}

/// Receipt times: ISO 8601 in UTC as Apple writes them, `YYYY-MM-DDTHH:MM:SS[.f{1,3}]Z`.
enum ReceiptTime {
    /// Unix seconds with the fraction dropped, or nil for any other text.
    ///
    /// Apple writes 1 to 3 fraction digits (trailing zeros trimmed: `40.46Z`); none at all is
    /// accepted too, as the form such a formatter gives a whole second.
    static func unixSeconds(_ text: [UInt8]) -> Int64? {
        guard text.count >= 20, text.last == UInt8(ascii: "Z") else { return nil }
        let separators: [Int: UInt8] = [
            4: UInt8(ascii: "-"), 7: UInt8(ascii: "-"), 10: UInt8(ascii: "T"), 13: UInt8(ascii: ":"), 16: UInt8(ascii: ":"),
        ]
        for (offset, separator) in separators where text[offset] != separator { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in text[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19)
        else { return nil }
        let fraction = text[19..<(text.count - 1)]
        if !fraction.isEmpty {
            guard fraction.first == UInt8(ascii: "."), (2...4).contains(fraction.count), number(20..<(text.count - 1)) != nil else {
                return nil
            }
        }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        return CivilTime.unixSeconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
