import AttestStorage
import AttestTesting
import Foundation

/// What attestd answered to one recorded attestation, and what it stored.
struct AttestationReplay: Sendable {
    let recorded: RecordedCase
    let workspaceID: String
    let attest: Answer
    let device: DeviceRecord?
    let authorize: Answer?
}

/// What attestd answered to one recorded assertion, then to the same assertion presented again.
struct AssertionReplay: Sendable {
    let recorded: RecordedCase
    let workspaceID: String
    let refresh: Answer
    let deviceAfterRefresh: DeviceRecord?
    let authorize: Answer?
    let replay: Answer
    let deviceAfterReplay: DeviceRecord?
}

/// One run of the whole plan against one attestd process, kept as values so that each test of the
/// suite checks its part and every failure names its case.
struct RecordedReplay: Sendable {
    var attestations: [AttestationReplay] = []
    var assertions: [AssertionReplay] = []
    /// Steps the harness could not take, each "<case id>: <what failed>".
    var harnessErrors: [String] = []
    /// `GET /healthz` once attestd listens.
    var health: Answer?
    /// attestd's exit status after SIGTERM; nil when it never started.
    var exitStatus: Int32?
    var log = ""
    var seconds = 0.0

    /// Starts attestd, replays every device of `plan` in order, stops attestd.
    static func perform(_ plan: ReplayPlan) -> RecordedReplay {
        var run = RecordedReplay()
        let started = Date()
        defer { run.seconds = Date().timeIntervalSince(started) }
        let instance: AttestdInstance
        let store: SQLiteTokenStore
        do {
            instance = try AttestdInstance()
            // attestd has migrated the database before it logs the port; this only reads.
            store = try SQLiteTokenStore(path: instance.databasePath, readerCount: 1, migrateAt: Int64(Date().timeIntervalSince1970))
        } catch {
            run.harnessErrors.append("attestd: \(error)")
            return run
        }
        do {
            run.health = try instance.request("GET", "/healthz")
        } catch {
            run.harnessErrors.append("GET /healthz: \(error)")
        }
        for device in plan.devices {
            do {
                try run.replay(device, on: instance, store: store)
            } catch {
                run.harnessErrors.append("\(device.attestation.recorded.id): \(error)")
            }
        }
        run.exitStatus = instance.stop()
        run.log = instance.logText
        return run
    }

    private mutating func replay(_ device: ReplayPlan.Device, on attestd: AttestdInstance, store: SQLiteTokenStore) throws {
        let recorded = device.attestation.recorded
        let workspaceID = Self.workspaceID(recorded.id)
        let created = try attestd.attestctl([
            "integration", "create", "--workspace", workspaceID, "--name", recorded.id, "--team-id", recorded.teamID,
            "--bundle-id", recorded.bundleID, "--environment", recorded.environment ?? "", "--json",
        ])
        guard let clientID = Self.stringField("client_id", in: created) else {
            throw HarnessError("attestctl printed no client_id: \(created)")
        }
        let keyID = recorded.keyID ?? []
        try Self.expectOK(attestd.post("/test/clock", ["now": String(recorded.verifyAtUnix ?? 0)]), "POST /test/clock")
        let challenge = try seed(device.attestation, clientID: clientID, on: attestd)
        let attest = try attestd.post(
            "/v1/attest",
            ["client_id": clientID, "key_id": recorded.keyIDB64 ?? "", "attestation": recorded.objectB64 ?? "", "challenge": challenge])
        let token = attest.status == 200 ? attest.field("access_token") : nil
        attestations.append(
            AttestationReplay(
                recorded: recorded, workspaceID: workspaceID, attest: attest, device: try store.device(keyID: keyID),
                authorize: try token.map { try Self.authorize($0, on: attestd) }))
        guard attest.status == 200 else { return }

        for step in device.assertions {
            do {
                try replay(step, clientID: clientID, workspaceID: workspaceID, keyID: keyID, on: attestd, store: store)
            } catch {
                harnessErrors.append("\(step.recorded.id): \(error)")
            }
        }
    }

    private mutating func replay(
        _ step: ReplayPlan.Step, clientID: String, workspaceID: String, keyID: [UInt8], on attestd: AttestdInstance,
        store: SQLiteTokenStore
    ) throws {
        let assertion = step.recorded
        let fields = ["client_id": clientID, "key_id": assertion.keyIDB64 ?? "", "assertion": assertion.objectB64 ?? ""]
        var refreshFields = fields
        refreshFields["challenge"] = try seed(step, clientID: clientID, on: attestd)
        let refresh = try attestd.post("/v1/token", refreshFields)
        let refreshed = try store.device(keyID: keyID)
        let token = refresh.status == 200 ? refresh.field("access_token") : nil
        let authorize = try token.map { try Self.authorize($0, on: attestd) }
        // The same object again, with its client data freshly seeded: only the counter can refuse it.
        var replayFields = fields
        replayFields["challenge"] = try seed(step, clientID: clientID, on: attestd)
        let replay = try attestd.post("/v1/token", replayFields)
        assertions.append(
            AssertionReplay(
                recorded: assertion, workspaceID: workspaceID, refresh: refresh, deviceAfterRefresh: refreshed, authorize: authorize,
                replay: replay, deviceAfterReplay: try store.device(keyID: keyID)))
    }

    /// Seeds the step's client data as an issued challenge and returns it as the device sends it.
    private func seed(_ step: ReplayPlan.Step, clientID: String, on attestd: AttestdInstance) throws -> String {
        // Only bytes that really hash to the recorded clientDataHash may stand for the challenge.
        guard step.recorded.hashesToClientDataHash(step.clientData) else {
            throw HarnessError("\(step.clientDataField) does not hash to client_data_hash_b64")
        }
        let challenge = Self.base64URL(step.clientData)
        try Self.expectOK(attestd.post("/test/challenge", ["client_id": clientID, "challenge": challenge]), "POST /test/challenge")
        return challenge
    }

    private static func authorize(_ token: String, on attestd: AttestdInstance) throws -> Answer {
        try attestd.request("GET", "/v1/authorize", headers: [("Authorization", "Bearer \(token)")])
    }

    private static func expectOK(_ answer: Answer, _ what: String) throws {
        guard answer.status == 200 else { throw HarnessError("\(what) answered \(answer.status): \(answer.text)") }
    }

    /// A workspace ID (A-Z a-z 0-9 _ -) naming the case, so each token's workspace is traceable.
    static func workspaceID(_ caseID: String) -> String {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
        return String(("ws_" + caseID).map { allowed.contains($0) ? $0 : "_" }.prefix(64))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private static func stringField(_ name: String, in json: String) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        return object?[name] as? String
    }
}
