// attest-client-probe: one app process for the client's tests of several processes on one key
// (Tests/AttestClientTests): the simulated device of a state directory, a FileKeyIDStore, and
// ROUNDS calls of token(forcingRefresh: true). Prints "ok ROUNDS" or the first error; exits 1 on it.
// Usage: attest-client-probe URL CLIENT_ID STATE_DIR KEY_FILE ROUNDS
import AttestClient
import AttestClientSimulator
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 6, let url = URL(string: arguments[1]), let rounds = Int(arguments[5]) else {
    FileHandle.standardError.write(Data("usage: attest-client-probe URL CLIENT_ID STATE_DIR KEY_FILE ROUNDS\n".utf8))
    exit(2)
}
do {
    let device = try SimulatedAppAttestDevice(
        stateDirectory: URL(fileURLWithPath: arguments[3]), teamID: "ABCDE12345", bundleID: "com.example.messages")
    let client = AttestClient(
        configuration: AttestClient.Configuration(baseURL: url, clientID: arguments[2]), device: device,
        keyStore: FileKeyIDStore(url: URL(fileURLWithPath: arguments[4])))
    for _ in 0..<rounds { _ = try await client.token(forcingRefresh: true) }
    print("ok \(rounds)")
} catch {
    print("failed: \(error)")
    exit(1)
}
