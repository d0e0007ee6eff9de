import AttestTesting
import Foundation

/// Which recorded cases can be replayed over HTTP exactly as a device would send them, and why the
/// others cannot. A case is expressible when its object is recorded whole and some recorded bytes
/// hash (SHA-256) to its clientDataHash: those bytes are then the challenge the server must have issued.
struct ReplayPlan {
    /// A recorded object and the bytes to seed as its challenge.
    struct Step {
        let recorded: RecordedCase
        /// The fixture field the bytes came from.
        let clientDataField: String
        let clientData: [UInt8]
    }

    /// One recorded key: its attestation, then its valid assertions in counter order.
    struct Device {
        let attestation: Step
        let assertions: [Step]
    }

    let devices: [Device]
    /// Cases left to the library tests, with the reason.
    let excluded: [(id: String, why: String)]

    var attestationIDs: Set<String> { Set(devices.map(\.attestation.recorded.id)) }
    var assertionIDs: Set<String> { Set(devices.flatMap { $0.assertions.map(\.recorded.id) }) }

    init(_ cases: [RecordedCase]) {
        var excluded: [(id: String, why: String)] = []
        var attestations: [Step] = []
        for recorded in cases where recorded.kind.hasPrefix("attestation") {
            if let why = Self.inexpressible(recorded) {
                excluded.append((recorded.id, why))
            } else if let clientData = recorded.hashedClientData {
                attestations.append(Step(recorded: recorded, clientDataField: clientData.field, clientData: clientData.bytes))
            }
        }
        let replayed = Set(attestations.map(\.recorded.id))
        var assertionsByDevice: [String: [Step]] = [:]
        for recorded in cases where recorded.kind == "assertion" {
            if recorded.expectedResult != "valid" {
                excluded.append((recorded.id, "not valid as recorded"))
            } else if let paired = recorded.pairedAttestationID, replayed.contains(paired) {
                if let why = Self.inexpressible(recorded) {
                    excluded.append((recorded.id, why))
                } else if let clientData = recorded.hashedClientData {
                    assertionsByDevice[paired, default: []].append(
                        Step(recorded: recorded, clientDataField: clientData.field, clientData: clientData.bytes))
                }
            } else if let paired = recorded.pairedAttestationID {
                excluded.append((recorded.id, "its paired attestation \(paired) is not replayed"))
            } else {
                excluded.append((recorded.id, "no paired attestation: its key cannot be registered over HTTP"))
            }
        }
        devices = attestations.map { attestation in
            Device(
                attestation: attestation,
                assertions: (assertionsByDevice[attestation.recorded.id] ?? []).sorted {
                    ($0.recorded.counterInObject ?? 0) < ($1.recorded.counterInObject ?? 0)
                })
        }
        self.excluded = excluded
    }

    /// Why a case cannot be sent as recorded, or nil when it can.
    private static func inexpressible(_ recorded: RecordedCase) -> String? {
        if recorded.object == nil { return "no whole object recorded (components need assembly)" }
        if recorded.isPartial || recorded.clientDataHash == nil { return "no clientDataHash recorded (challenge unknown)" }
        if recorded.keyID == nil { return "no key ID recorded" }
        if recorded.kind.hasPrefix("attestation") && (recorded.environment == nil || recorded.verifyAtUnix == nil) {
            return "no environment or verification time recorded"
        }
        if recorded.hashedClientData == nil { return "clientDataHash is not SHA-256 of any recorded bytes" }
        return nil
    }
}
