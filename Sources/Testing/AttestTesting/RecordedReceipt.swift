import AttestCore
import Foundation

/// One Apple receipt recorded from a real device: the `attStmt.receipt` of every recorded
/// attestation object in `fixtures/appattest/recorded/`, and every receipt (attestation and
/// refreshed) in `fixtures/appattest/veehaitch-yaml/`.
package struct RecordedReceipt: Sendable, CustomStringConvertible {
    /// The recording's decoding of the receipt (veehaitch-yaml `properties`), for comparison.
    package struct Properties: Sendable {
        package let type: String
        /// `sandbox` or `production`, as the recording wrote it.
        package let environment: String
        package let creationTime: String
        package let expirationTime: String
        package let notBefore: String?
        package let riskMetric: Int?
        package let tokenB64: String?
    }

    /// `recorded/<case id>` or `veehaitch-yaml/<file>#<n>` (n counts receipts in the file from 0).
    package let id: String
    package let receipt: [UInt8]
    package let appID: String
    /// DER of the credential certificate of the attestation the receipt belongs to.
    package let certificate: [UInt8]
    /// When the receipt was recorded: the case's `verify_at_unix`, or the YAML `timestamp`.
    package let recordedAt: Int64
    package let properties: Properties?

    package var description: String { id }

    /// Index of the first byte of the ECDSA `r` value in a CMS object's signature (`04 L 30 L-2 02`),
    /// searched from the end: the signer info is the last thing in the object. For tamper tests.
    package static func signatureByteIndex(_ bytes: [UInt8]) -> Int? {
        for index in stride(from: bytes.count - 8, through: 0, by: -1)
        where bytes[index] == 0x04 && (0x44...0x48).contains(bytes[index + 1]) && bytes[index + 2] == 0x30
            && bytes[index + 3] == bytes[index + 1] - 2 && bytes[index + 4] == 0x02
        {
            return index + 7
        }
        return nil
    }
}

extension Fixtures {
    /// Every recorded receipt, recorded attestations first, then the YAML files in name order.
    package static func recordedReceipts() throws -> [RecordedReceipt] {
        var receipts: [RecordedReceipt] = []
        for recorded in try recordedCases() where recorded.kind == "attestation" {
            guard let bytes = recorded.object, let time = recorded.verifyAtUnix else { continue }
            let object = try AttestationObject(cbor: bytes)
            guard let leaf = object.certificateChain.first else { continue }
            receipts.append(
                RecordedReceipt(
                    id: "recorded/\(recorded.id)", receipt: object.receipt, appID: recorded.appID, certificate: leaf, recordedAt: time,
                    properties: nil))
        }
        let folder = directory.appendingPathComponent("appattest/veehaitch-yaml")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".yaml") }.sorted()
        for name in names {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            receipts += try yamlReceipts(text, file: name)
        }
        return receipts
    }

    /// The receipts of one veehaitch YAML file: documents separated by `---`, one `key: value` per
    /// line, the receipt's decoding indented under `properties:`.
    static func yamlReceipts(_ text: String, file: String) throws -> [RecordedReceipt] {
        let documents = text.components(separatedBy: "\n---").map(yamlFields)
        var leaves: [String: [UInt8]] = [:]
        for document in documents where document["type"] == "attestation" {
            guard let id = document["id"], let bytes = RecordedCase.bytes(document["attestationBase64"]) else { continue }
            leaves[id] = try AttestationObject(cbor: bytes).certificateChain.first
        }
        // ios-14.3-beta-2.yaml's receipts name their attestation `a3b2868-...` where its id is
        // `5a3b2868-...` (the source lost a digit); each file holds one attestation, so take it.
        // The tests' certificate check (field 3 equals this leaf) confirms the pairing.
        let onlyLeaf = leaves.count == 1 ? leaves.values.first : nil
        var receipts: [RecordedReceipt] = []
        for document in documents where document["type"] == "receipt" {
            guard let receipt = RecordedCase.bytes(document["receiptBase64"]), let team = document["teamIdentifier"],
                let bundle = document["bundleIdentifier"], let attestation = document["attestationId"],
                let certificate = leaves[attestation] ?? onlyLeaf, let timestamp = document["timestamp"].flatMap(unixSeconds)
            else { throw FixtureError(file: file, document: document.keys.sorted()) }
            let properties = RecordedReceipt.Properties(
                type: document["properties.type"] ?? "", environment: document["properties.environment"] ?? "",
                creationTime: document["properties.creationTime"] ?? "", expirationTime: document["properties.expirationTime"] ?? "",
                notBefore: document["properties.notBefore"], riskMetric: document["properties.riskMetric"].flatMap { Int($0) },
                tokenB64: document["properties.token"])
            receipts.append(
                RecordedReceipt(
                    id: "veehaitch-yaml/\(file)#\(receipts.count)", receipt: receipt, appID: "\(team).\(bundle)",
                    certificate: certificate, recordedAt: timestamp, properties: properties))
        }
        return receipts
    }

    /// Top-level `key: value` lines, and `properties.key` for the lines indented under `properties:`;
    /// quotes removed, empty values left out.
    private static func yamlFields(_ document: String) -> [String: String] {
        var fields: [String: String] = [:]
        var inProperties = false
        for line in document.split(separator: "\n", omittingEmptySubsequences: true) {
            let indented = line.hasPrefix("  ")
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard let colon = trimmed.firstIndex(of: ":") else { continue }
            let key = String(trimmed[..<colon])
            var value = trimmed[trimmed.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("'"), value.hasSuffix("'"), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            if !indented { inProperties = key == "properties" }
            guard !value.isEmpty, value != "|" else { continue }
            if indented {
                if inProperties { fields["properties.\(key)"] = value }
            } else {
                fields[key] = value
            }
        }
        return fields
    }

    /// Unix seconds (fraction dropped) of an ISO 8601 UTC time with or without fraction digits.
    package static func unixSeconds(_ iso: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plain = ISO8601DateFormatter()
        guard let date = formatter.date(from: iso) ?? plain.date(from: iso) else { return nil }
        return Int64(date.timeIntervalSince1970.rounded(.down))
    }
}

/// A YAML receipt document without the fields a receipt needs.
struct FixtureError: Error {
    let file: String
    let document: [String]
}
