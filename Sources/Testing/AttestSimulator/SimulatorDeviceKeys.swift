package import AttestCore
import AttestCrypto
import Foundation
import Glibc

/// The App Attest keys of one simulated app, kept in the simulator's state directory beside its
/// PKI so that a device outlives its process (an app restart finds its key again). One key is two
/// files in `devices/<team ID>.<bundle ID>/`, named by the key ID in hex: `<hex>.pem`, the P-256
/// key (PKCS#8, mode 0600), and `<hex>.state`, what Apple's service would know of it (`attested=0|1`
/// and the last assertion `counter=N`, one per line). Every read-modify-write holds an exclusive
/// `flock` on `devices/<app>/.lock`, so two instances (or processes) sharing the directory never
/// hand out the same counter twice.
package struct SimulatorDeviceKeys: Sendable {
    /// The directory of this app's keys.
    package let directory: String

    /// A saved key and its state.
    package struct Record: Sendable {
        package var device: SyntheticDevice
        /// True once the key has been attested (Apple attests a key once).
        package var attested: Bool
    }

    /// The keys of `appID` under the state directory `state`.
    package init(state: SimulatorState, appID: AppID) {
        directory = (state.directory as NSString).appendingPathComponent("devices/\(appID.teamID).\(appID.bundleID)")
    }

    /// A new key, saved unattested with counter 0.
    package func create() throws -> SyntheticDevice {
        let device: SyntheticDevice
        do {
            device = try SyntheticDevice()
        } catch {
            throw SimulatorState.StateError(description: "cannot make a device key: \(error)")
        }
        try locked { () throws(SimulatorState.StateError) in
            try write(Record(device: device, attested: false), key: true)
        }
        return device
    }

    /// Runs `body` on the saved record of `keyID` and saves what it leaves, all under the lock; nil
    /// (and `body` not run) when no such key is saved. The record is saved only when `body` returns.
    package func update<T>(_ keyID: [UInt8], _ body: (inout Record) throws -> T) throws -> T? {
        try locked { () throws -> T? in
            guard var record = try read(keyID) else { return nil }
            let result = try body(&record)
            try write(record, key: false)
            return result
        }
    }

    private func path(_ keyID: [UInt8], _ suffix: String) -> String {
        (directory as NSString).appendingPathComponent(Hex.encode(keyID) + suffix)
    }

    private func read(_ keyID: [UInt8]) throws(SimulatorState.StateError) -> Record? {
        guard keyID.count == 32, let pem = try? String(contentsOfFile: path(keyID, ".pem"), encoding: .utf8) else { return nil }
        let state = (try? String(contentsOfFile: path(keyID, ".state"), encoding: .utf8)) ?? ""
        var fields: [Substring: Substring] = [:]
        for line in state.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        guard let attested = fields["attested"], let counterText = fields["counter"], let counter = UInt32(counterText) else {
            throw SimulatorState.StateError(description: "\(path(keyID, ".state")) is damaged; delete the key's two files")
        }
        do {
            let device = try SyntheticDevice(key: PrivateKey(pem: pem), counter: counter)
            guard device.keyID == keyID else {
                throw SimulatorState.StateError(description: "\(path(keyID, ".pem")) holds another key")
            }
            return Record(device: device, attested: attested == "1")
        } catch let error as SimulatorState.StateError {
            throw error
        } catch {
            throw SimulatorState.StateError(description: "cannot read \(path(keyID, ".pem")): \(error)")
        }
    }

    private func write(_ record: Record, key: Bool) throws(SimulatorState.StateError) {
        if key {
            let pem: String
            do {
                pem = try record.device.key.pem
            } catch {
                throw SimulatorState.StateError(description: "cannot encode a device key: \(error)")
            }
            guard SimulatorState.writePrivately(Data(pem.utf8), to: path(record.device.keyID, ".pem")) else {
                throw SimulatorState.StateError(description: "cannot write \(path(record.device.keyID, ".pem"))")
            }
        }
        let state = "attested=\(record.attested ? 1 : 0)\ncounter=\(record.device.counter)\n"
        guard SimulatorState.writePrivately(Data(state.utf8), to: path(record.device.keyID, ".state")) else {
            throw SimulatorState.StateError(description: "cannot write \(path(record.device.keyID, ".state"))")
        }
    }

    /// Runs `body` holding the directory's exclusive lock (made with the directory, mode 0700).
    private func locked<E: Error, T>(_ body: () throws(E) -> T) throws -> T {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw SimulatorState.StateError(description: "cannot create \(directory): \(error)")
        }
        let descriptor = open((directory as NSString).appendingPathComponent(".lock"), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SimulatorState.StateError(description: "cannot open the lock file in \(directory)") }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw SimulatorState.StateError(description: "cannot lock \(directory)") }
        }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }
}
