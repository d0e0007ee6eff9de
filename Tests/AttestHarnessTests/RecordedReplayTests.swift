import AttestStorage
import AttestTesting
import Foundation
import Testing

/// The cases, the plan and one replay against one attestd process, shared by the suite's tests.
enum Harness {
    static let cases: [RecordedCase] = (try? Fixtures.recordedCases()) ?? []
    static let plan = ReplayPlan(cases)
    static let run = RecordedReplay.perform(plan)
}

@Suite("Recorded devices replayed through the real attestd (Apple's root, --insecure-test-mode)", .serialized)
struct RecordedReplayTests {
    @Test("runs one attestd trusting Apple's root for the whole replay, well under a minute, and it exits 0 on SIGTERM")
    func oneProcess() throws {
        let run = Harness.run
        for error in run.harnessErrors { Issue.record("harness: \(error)") }
        let health = try #require(run.health, "attestd never answered /healthz")
        #expect(health.field("trust_anchor") == "apple", "\(health.text)")
        #expect(health.object["test_mode"] as? Bool == true, "\(health.text)")
        #expect(run.log.contains("INSECURE TEST MODE"))
        #expect(run.exitStatus == 0, "attestd exited \(String(describing: run.exitStatus)); log:\n\(run.log.suffix(2000))")
        #expect(run.seconds < 45, "the replay took \(run.seconds) s")
    }

    @Test(
        "replays every recorded attestation whose clientDataHash is SHA-256 of recorded bytes: 200, the device stored at counter 0 with the recorded environment and key, and its token authorizes"
    )
    func attestations() {
        let run = Harness.run
        #expect(!Harness.plan.devices.isEmpty, "the plan replays no attestation")
        for device in Harness.plan.devices {
            let id = device.attestation.recorded.id
            guard let replay = run.attestations.first(where: { $0.recorded.id == id }) else {
                Issue.record("\(id): not replayed")
                continue
            }
            #expect(replay.attest.status == 200, "\(id): /v1/attest answered \(replay.attest.status) \(replay.attest.text)")
            guard let stored = replay.device else {
                Issue.record("\(id): no device stored for its key ID")
                continue
            }
            #expect(stored.counter == 0, "\(id): stored counter \(stored.counter)")
            #expect(stored.environment.rawValue == replay.recorded.environment, "\(id): stored environment \(stored.environment)")
            let point = replay.recorded.credentialPublicKeyPoint
            #expect(point != nil, "\(id): credential_public_key_pem is missing or does not parse")
            #expect(stored.publicKey == point, "\(id): stored public key differs from credential_public_key_pem")
            #expect(stored.status == .active, "\(id): device status \(stored.status)")
            #expect(replay.authorize?.status == 200, "\(id): /v1/authorize answered \(replay.authorize?.status ?? 0)")
            #expect(replay.authorize?.header("X-Workspace-Id") == replay.workspaceID, "\(id): X-Workspace-Id")
        }
    }

    @Test("every replayed attestation's receipt verifies through /v1/attest at its recorded time: the stored verdict is valid, type ATTEST")
    func receipts() {
        let run = Harness.run
        for replay in run.attestations where replay.attest.status == 200 {
            let state = replay.device?.receiptState
            #expect(state?.verdict == .valid, "\(replay.recorded.id): receipt verdict \(state?.verdict.description ?? "none")")
            #expect(state?.type == .attest, "\(replay.recorded.id)")
            #expect((state?.expiresAt ?? 0) > (state?.createdAt ?? 0), "\(replay.recorded.id)")
        }
    }

    @Test(
        "refreshes a token with every valid recorded assertion of a replayed device: 200, the recorded counter stored, and the new token authorizes"
    )
    func assertions() {
        let run = Harness.run
        for step in Harness.plan.devices.flatMap(\.assertions) {
            let id = step.recorded.id
            guard let replay = run.assertions.first(where: { $0.recorded.id == id }) else {
                Issue.record("\(id): not replayed")
                continue
            }
            #expect(replay.refresh.status == 200, "\(id): /v1/token answered \(replay.refresh.status) \(replay.refresh.text)")
            let expected = replay.recorded.expectedCounter ?? replay.recorded.counterInObject
            #expect(expected != nil, "\(id): no expected_counter or counter_in_object recorded")
            #expect(replay.deviceAfterRefresh?.counter == expected, "\(id): stored counter \(replay.deviceAfterRefresh?.counter ?? 0)")
            #expect(replay.authorize?.status == 200, "\(id): /v1/authorize answered \(replay.authorize?.status ?? 0)")
            #expect(replay.authorize?.header("X-Workspace-Id") == replay.workspaceID, "\(id): X-Workspace-Id")
        }
    }

    @Test("refuses every such assertion presented again with a fresh challenge: 401 assertion_rejected, counter_not_increasing")
    func replayedAssertions() {
        let run = Harness.run
        for step in Harness.plan.devices.flatMap(\.assertions) {
            let id = step.recorded.id
            guard let replay = run.assertions.first(where: { $0.recorded.id == id }) else {
                Issue.record("\(id): not replayed")
                continue
            }
            let answer = replay.replay
            #expect(answer.status == 401, "\(id): the replay answered \(answer.status) \(answer.text)")
            #expect(answer.field("code") == "assertion_rejected", "\(id): \(answer.text)")
            #expect(answer.field("reason") == "counter_not_increasing", "\(id): \(answer.text)")
            #expect(replay.deviceAfterReplay?.counter == replay.deviceAfterRefresh?.counter, "\(id): the refused replay moved the counter")
        }
    }

    @Test("replays at least the attestations and assertions the README counts, and each case it lists as harness-covered")
    func coverageFloor() throws {
        let readme = try HarnessReadme.load()
        let run = Harness.run
        let attested = Set(run.attestations.filter { $0.attest.status == 200 && $0.device != nil }.map(\.recorded.id))
        let refreshed = Set(
            run.assertions.filter { $0.refresh.status == 200 && $0.replay.status == 401 }.map(\.recorded.id))
        #expect(
            attested.count >= readme.statedAttestations,
            "replayed \(attested.count) attestations, the README promises \(readme.statedAttestations)")
        #expect(
            refreshed.count >= readme.statedAssertions,
            "replayed \(refreshed.count) assertions, the README promises \(readme.statedAssertions)")
        for id in readme.harnessIDs.sorted() where !attested.contains(id) && !refreshed.contains(id) {
            Issue.record("\(id): the README says the harness replays it, but it was not replayed successfully")
        }
    }
}

@Suite("The harness README (Tests/AttestHarnessTests/README.md)")
struct HarnessReadmeTests {
    @Test("lists every recorded case exactly once, as covered by the harness or by the library")
    func listsEveryCase() throws {
        let readme = try HarnessReadme.load()
        #expect(!Harness.cases.isEmpty, "no recorded case loaded")
        let listed = readme.rows.map(\.id)
        for id in Set(listed) where listed.filter({ $0 == id }).count > 1 { Issue.record("\(id): listed more than once") }
        let recorded = Set(Harness.cases.map(\.id))
        for id in recorded.subtracting(listed).sorted() { Issue.record("\(id): recorded but not in the README") }
        for id in Set(listed).subtracting(recorded).sorted() { Issue.record("\(id): in the README but not recorded") }
        for row in readme.rows where !["harness", "library"].contains(row.coverage) {
            Issue.record("\(row.id): coverage '\(row.coverage)' is neither harness nor library")
        }
    }

    @Test("marks as harness-covered exactly the cases the harness can express, and its totals match its table")
    func matchesThePlan() throws {
        let readme = try HarnessReadme.load()
        let planned = Harness.plan.attestationIDs.union(Harness.plan.assertionIDs)
        for id in planned.subtracting(readme.harnessIDs).sorted() { Issue.record("\(id): the harness replays it; the README says library") }
        for id in readme.harnessIDs.subtracting(planned).sorted() {
            let why = Harness.plan.excluded.first { $0.id == id }?.why ?? "unknown"
            Issue.record("\(id): the README says harness, but the harness cannot express it (\(why))")
        }
        #expect(readme.statedAttestations == readme.harnessIDs.filter { Harness.plan.attestationIDs.contains($0) }.count)
        #expect(readme.statedAssertions == readme.harnessIDs.filter { Harness.plan.assertionIDs.contains($0) }.count)
    }
}

/// The coverage table of `README.md` beside this file: `| \`case id\` | kind | harness or library | why |`,
/// and the line `Harness: N attestations, M assertions.`
struct HarnessReadme {
    struct Row {
        let id: String
        let coverage: String
    }

    let rows: [Row]
    let statedAttestations: Int
    let statedAssertions: Int

    var harnessIDs: Set<String> { Set(rows.filter { $0.coverage == "harness" }.map(\.id)) }

    static func load() throws -> HarnessReadme {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("README.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let rows = text.split(separator: "\n").compactMap { line -> Row? in
            guard line.hasPrefix("| `") else { return nil }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3 else { return nil }
            return Row(id: cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`")), coverage: cells[2])
        }
        let totals = try #require(
            text.firstMatch(of: /Harness: (\d+) attestations, (\d+) assertions\./),
            "README.md has no 'Harness: N attestations, M assertions.'")
        return HarnessReadme(rows: rows, statedAttestations: Int(totals.1) ?? 0, statedAssertions: Int(totals.2) ?? 0)
    }
}
