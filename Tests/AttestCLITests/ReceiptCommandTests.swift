import AttestCLI
import AttestCrypto
import AttestTesting
import Foundation
import Testing

extension RecordedReceipt: CustomTestStringConvertible {
    package var testDescription: String { id }
}

@Suite("attestctl verify receipt")
struct ReceiptCommandTests {
    static let receipts: [RecordedReceipt] = (try? Fixtures.recordedReceipts()) ?? []
    static let keys: Set<String> = [
        "valid", "type", "app_id", "environment", "created_at", "not_before", "expires_at", "risk_metric", "certificate_sha256",
    ]

    static func pem(_ der: [UInt8]) -> [UInt8] {
        let body = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return Array("-----BEGIN CERTIFICATE-----\n\(body)\n-----END CERTIFICATE-----\n".utf8)
    }

    static func console(_ recorded: RecordedReceipt, receipt: [UInt8]? = nil, certificate: [UInt8]? = nil) -> Console {
        Console(files: [
            "receipt.b64": Array((Data(receipt ?? recorded.receipt).base64EncodedString() + "\n").utf8),
            "leaf.pem": pem(certificate ?? recorded.certificate),
        ])
    }

    static func arguments(_ recorded: RecordedReceipt, at: Int64? = nil, appID: String? = nil, certificate: Bool = true) -> [String] {
        ["verify", "receipt", "--object", "receipt.b64", "--app-id", appID ?? recorded.appID, "--at", String(at ?? recorded.recordedAt)]
            + (certificate ? ["--certificate", "leaf.pem"] : [])
    }

    static var attest: RecordedReceipt? { receipts.first { $0.id == "recorded/uebelack_production_attestation" } }
    static var refreshed: RecordedReceipt? { receipts.first { $0.id == "veehaitch-yaml/ios-14.2.yaml#1" } }

    @Test(
        "every recorded receipt verifies at its recorded time with its certificate; exit 0 and exactly the documented keys",
        arguments: receipts)
    func verifies(_ recorded: RecordedReceipt) {
        let console = Self.console(recorded)
        #expect(console.run(Self.arguments(recorded)) == 0)
        let json = console.json
        #expect(Set(json.keys) == Self.keys)
        #expect(json["valid"] as? Bool == true)
        #expect(json["app_id"] as? String == recorded.appID)
        #expect(["ATTEST", "RECEIPT"].contains(json["type"] as? String ?? ""))
        #expect(["production", "development"].contains(json["environment"] as? String ?? ""))
        #expect(json["certificate_sha256"] as? String == Hex.encode(Digest.sha256(recorded.certificate)))
        let created = json["created_at"] as? Int ?? 0
        #expect(json["expires_at"] as? Int == created + 90 * 86_400)
        if json["type"] as? String == "ATTEST" {
            #expect(json["not_before"] is NSNull)
            #expect(json["risk_metric"] is NSNull)
        } else {
            #expect(json["not_before"] as? Int == created + 86_400)
            #expect(json["risk_metric"] is Int)
        }
        if let properties = recorded.properties {
            #expect(json["risk_metric"] as? Int == properties.riskMetric)
            #expect(json["created_at"] as? Int == Fixtures.unixSeconds(properties.creationTime).map(Int.init))
        }
    }

    @Test("reads the receipt from standard input with '-', without --certificate")
    func standardInput() throws {
        let recorded = try #require(Self.refreshed)
        let console = Console(stdin: Array(Data(recorded.receipt).base64EncodedString().utf8))
        let arguments = ["verify", "receipt", "--object", "-", "--app-id", recorded.appID, "--at", String(recorded.recordedAt)]
        #expect(console.run(arguments) == 0)
        #expect(console.json["type"] as? String == "RECEIPT")
        #expect(console.json["risk_metric"] as? Int == 2)
        #expect(console.json["environment"] as? String == "development")
    }

    @Test("defaults --at to now, where the signer's certificate has expired")
    func now() throws {
        let recorded = try #require(Self.attest)
        let console = Self.console(recorded)
        #expect(console.run(["verify", "receipt", "--object", "receipt.b64", "--app-id", recorded.appID]) == 1)
        #expect(console.json["code"] as? String == "receipt_chain_invalid:expired")
        #expect(Set(console.json.keys) == ["valid", "code", "reason"])
        #expect(console.json["valid"] as? Bool == false)
    }

    @Test("exits 1 with the check's code for a tampered receipt")
    func refusals() throws {
        let recorded = try #require(Self.refreshed)
        var flipped = recorded.receipt
        flipped[try #require(RecordedReceipt.signatureByteIndex(flipped))] ^= 0x01
        let other = try #require(Self.receipts.first { $0.certificate != recorded.certificate })
        let cases: [(String, Console, [String])] = [
            ("receipt_signature", Self.console(recorded, receipt: flipped), Self.arguments(recorded)),
            (
                "receipt_app_id", Self.console(recorded),
                Self.arguments(recorded, appID: "6MURL8TA57.de.vincent-haupert.apple-appattest-poD")
            ),
            ("receipt_certificate", Self.console(recorded, certificate: other.certificate), Self.arguments(recorded)),
            ("receipt_expired", Self.console(recorded), Self.arguments(recorded, at: 1_613_772_965)),
            ("receipt_trailing_bytes", Self.console(recorded, receipt: recorded.receipt + [0]), Self.arguments(recorded)),
            ("receipt_cms", Self.console(recorded, receipt: recorded.certificate), Self.arguments(recorded)),
        ]
        for (code, console, arguments) in cases {
            #expect(console.run(arguments) == 1, "\(code)")
            #expect(console.json["code"] as? String == code)
            #expect(console.json["valid"] as? Bool == false)
        }
        // One second before its expiration it still verifies.
        #expect(Self.console(recorded).run(Self.arguments(recorded, at: 1_613_772_964)) == 0)
    }

    @Test("exits 1 for a file that is not base64 or a certificate file that is not PEM")
    func unreadableInputs() throws {
        let recorded = try #require(Self.attest)
        let console = Console(files: ["receipt.b64": Array("not base64!".utf8), "leaf.pem": Self.pem(recorded.certificate)])
        #expect(console.run(Self.arguments(recorded)) == 1)
        #expect(console.json["code"] as? String == "object_encoding")
        let badPEM = Console(files: ["receipt.b64": Array(Data(recorded.receipt).base64EncodedString().utf8), "leaf.pem": [0x30]])
        #expect(badPEM.run(Self.arguments(recorded)) == 1)
        #expect(badPEM.json["code"] as? String == "certificate_encoding")
    }

    @Test(
        "exits 64 with usage on stderr for usage errors",
        arguments: [
            ["verify", "receipt"],
            ["verify", "receipt", "--object", "r"],
            ["verify", "receipt", "--app-id", "ABCDE12345.a"],
            ["verify", "receipt", "--object", "r", "--app-id", "lowercase.a"],
            ["verify", "receipt", "--object", "r", "--app-id", "ABCDE12345.a", "--at", "yesterday"],
            ["verify", "receipt", "--object", "r", "--app-id", "ABCDE12345.a", "--at", "-1"],
            ["verify", "receipt", "--object", "r", "--app-id", "ABCDE12345.a", "--environment", "any"],
        ])
    func usage(_ arguments: [String]) {
        let console = Console()
        #expect(console.run(arguments) == 64)
        #expect(console.err.withLock { $0 }.contains("usage: attestctl verify receipt"))
        #expect(console.out.withLock { $0 }.isEmpty)
    }
}
