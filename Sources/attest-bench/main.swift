import AttestCore
import AttestCrypto
import AttestTesting
import Foundation

// Verification throughput on one thread, for scripts/bench-verify (which prints it beside
// `openssl speed` and pyattest from the same run). Not a test: it only measures.
//
//   attest-bench [--seconds S] [--case ID] [--iterations N]
//
// Prints `attestation_verifications_per_second`, `attestation_uncached_verifications_per_second`
// (a fresh verifier each time, so both P-384 signatures are checked) and
// `assertion_verifications_per_second`.

func option(_ name: String, default value: String) -> String {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return value }
    return arguments[index + 1]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("attest-bench: \(message)\n".utf8))
    exit(1)
}

func rate(seconds: Double, _ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    let limit = Duration.milliseconds(Int64(seconds * 1000))
    var count = 0
    while clock.now - start < limit {
        for _ in 0..<16 { try body() }
        count += 16
    }
    let elapsed = clock.now - start
    return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

let seconds = Double(option("--seconds", default: "3")) ?? 3
let caseID = option("--case", default: "veehaitch_ios-14.4_attestation")

do {
    let attestation = try Fixtures.recordedCase(caseID)
    guard let pairedAssertion = try Fixtures.recordedCases().first(where: { $0.pairedAttestationID == caseID }) else {
        fail("no assertion is paired with \(caseID)")
    }
    guard let object = attestation.object, let keyID = attestation.keyID, let clientDataHash = attestation.clientDataHash,
        let time = attestation.verifyAtUnix, let assertionObject = pairedAssertion.object,
        let assertionHash = pairedAssertion.clientDataHash, let pem = pairedAssertion.publicKeyPEM
    else { fail("\(caseID) lacks a field the benchmark needs") }
    let input = AttestationInput(
        object: object, keyID: keyID, clientDataHash: clientDataHash, appIDs: [try AppID(attestation.appID)],
        allowedEnvironments: Set(AppAttestEnvironment.allCases), time: time)
    let anchor = try TrustAnchor.appleAppAttestationRoot()
    let verifier = try AttestationVerifier(anchor: anchor)
    // Prove the measured path really accepts before timing it.
    _ = try verifier.verify(input)
    let assertionInput = AssertionInput(
        object: assertionObject, clientDataHash: assertionHash, publicKey: try PublicKey(pem: pem),
        appIDs: [try AppID(pairedAssertion.appID)], previousCounter: pairedAssertion.previousCounter ?? 0)
    _ = try AssertionVerifier.verify(assertionInput)

    if let iterations = Int(option("--iterations", default: "")) {
        // Fixed work for instruction counting (valgrind --tool=callgrind): no clock involved.
        for _ in 0..<iterations { _ = try verifier.verify(input) }
        for _ in 0..<iterations { _ = try AssertionVerifier.verify(assertionInput) }
        exit(0)
    }
    let attestations = try rate(seconds: seconds) { _ = try verifier.verify(input) }
    let uncached = try rate(seconds: seconds) { _ = try AttestationVerifier(anchor: anchor).verify(input) }
    let assertions = try rate(seconds: seconds) { _ = try AssertionVerifier.verify(assertionInput) }
    print("case \(caseID)")
    print("attestation_verifications_per_second \(String(format: "%.1f", attestations))")
    print("attestation_uncached_verifications_per_second \(String(format: "%.1f", uncached))")
    print("assertion_verifications_per_second \(String(format: "%.1f", assertions))")
} catch {
    fail("\(error)")
}
