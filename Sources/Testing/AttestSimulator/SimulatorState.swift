import AttestCrypto
import Foundation
import Glibc

/// The simulator's test PKI kept on disk so that the root attestd trusts survives between runs:
/// the root and intermediate, each as a key and a certificate in PEM. `attestctl simulate` makes
/// and renews it; `attest-load` reads it.
package struct SimulatorState: Sendable {
    /// Where the state lives unless `--state` says otherwise (relative to the working directory).
    package static let defaultDirectory = ".attestctl-simulator"

    static let rootKeyFile = "root-key.pem"
    static let rootFile = "root.pem"
    static let intermediateKeyFile = "intermediate-key.pem"
    static let intermediateFile = "intermediate.pem"
    static let allFiles = [rootKeyFile, rootFile, intermediateKeyFile, intermediateFile]

    /// Why the state directory could not be used (exit 1 with the message).
    package struct StateError: Error, CustomStringConvertible {
        package let description: String
    }

    package let directory: String

    package init(directory: String) {
        self.directory = directory
    }

    /// The PKI valid at `now`: the saved one, or a new one written on first use. A saved root that
    /// is not valid at `now` is replaced (with a note saying attestd must be given the new root); a
    /// saved intermediate that is not valid is reissued under the same root.
    package func load(now: Int64) throws(StateError) -> (pki: SyntheticPKI, note: String?) {
        let present = Self.allFiles.filter { FileManager.default.fileExists(atPath: path($0)) }
        if present.isEmpty {
            let pki = try generate(now: now)
            try save(pki)
            return (pki, nil)
        }
        guard present.count == Self.allFiles.count else {
            throw StateError(
                description: "\(directory) is incomplete (has \(present.joined(separator: ", ")) only); delete it to start a new test PKI")
        }
        let saved = try read()
        if !Self.isValid(saved.root, at: now) {
            let pki = try generate(now: now)
            try save(pki)
            return (
                pki,
                "the saved root in \(directory) was not valid now, so a new test PKI was made: write the trust anchor again "
                    + "(attestctl simulate --write-trust-anchor FILE) and restart attestd with it"
            )
        }
        if !Self.isValid(saved.intermediate, at: now) {
            let pki: SyntheticPKI
            do {
                pki = try SyntheticPKI(rootKey: saved.rootKey, root: saved.root, validAround: now)
            } catch {
                throw StateError(description: "cannot issue a new intermediate: \(error)")
            }
            try save(pki)
            return (pki, "the saved intermediate in \(directory) was not valid now; issued a new one under the same root")
        }
        return (saved, nil)
    }

    /// The saved PKI as it is, valid or not.
    package func read() throws(StateError) -> SyntheticPKI {
        do {
            return SyntheticPKI(
                rootKey: try PrivateKey(pem: read(Self.rootKeyFile)), root: try Certificate(pemEncoded: read(Self.rootFile)),
                intermediateKey: try PrivateKey(pem: read(Self.intermediateKeyFile)),
                intermediate: try Certificate(pemEncoded: read(Self.intermediateFile)))
        } catch let error as StateError {
            throw error
        } catch {
            throw StateError(description: "cannot read the test PKI in \(directory) (\(error)); delete it to start a new one")
        }
    }

    static func isValid(_ certificate: Certificate, at time: Int64) -> Bool {
        guard let notBefore = certificate.notBefore, let notAfter = certificate.notAfter else { return false }
        return notBefore <= time && time <= notAfter
    }

    private func path(_ file: String) -> String { (directory as NSString).appendingPathComponent(file) }

    private func read(_ file: String) throws(StateError) -> String {
        guard let text = try? String(contentsOfFile: path(file), encoding: .utf8) else {
            throw StateError(description: "cannot read \(path(file))")
        }
        return text
    }

    private func generate(now: Int64) throws(StateError) -> SyntheticPKI {
        do {
            return try SyntheticPKI(validAround: now, rootName: "attestctl simulator App Attestation Root CA")
        } catch {
            throw StateError(description: "cannot generate the test PKI: \(error)")
        }
    }

    private func save(_ pki: SyntheticPKI) throws(StateError) {
        // The keys are unencrypted test keys: keep the directory and the files private to the user
        // anyway, since anyone who holds them can mint attestations an attestd trusting this root accepts.
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw StateError(description: "cannot create \(directory): \(error)")
        }
        let contents: [(String, String)]
        do {
            contents = [
                (Self.rootKeyFile, try pki.rootKey.pem), (Self.intermediateKeyFile, try pki.intermediateKey.pem),
                (Self.intermediateFile, pki.intermediate.pem), (Self.rootFile, pki.root.pem),
            ]
        } catch {
            throw StateError(description: "cannot encode the test PKI: \(error)")
        }
        for (file, text) in contents {
            guard Self.writePrivately(Data(text.utf8), to: path(file)) else {
                throw StateError(description: "cannot write \(path(file))")
            }
        }
    }

    /// Writes `data` to `path` with mode 0600, aside and renamed, so that a reader never sees half
    /// a file; false when it could not.
    static func writePrivately(_ data: Data, to path: String) -> Bool {
        let temporary = (path as NSString).deletingLastPathComponent + "/.\((path as NSString).lastPathComponent).\(getpid()).tmp"
        guard
            FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]),
            rename(temporary, path) == 0
        else {
            try? FileManager.default.removeItem(atPath: temporary)
            return false
        }
        return true
    }
}
