import CBuildInfo

/// The release every binary of this package reports (`--version`, `/healthz`, `attestd_build_info`).
/// The Debian package's version (scripts/package) is read from here.
package enum BuildVersion {
    package static let current = "0.4.0"
    /// The newest migration this build knows and applies (its schema): several builds of one
    /// release in development differ by it (a test holds it to the embedded migrations).
    package static let schema = 13

    /// The commit a release build was made from (`git describe --always --dirty`, given by
    /// scripts/package); empty for a development build.
    package static let commit = String(cString: attestd_build_commit())

    /// What `--version` prints after the program's name: `0.4.0 (schema 13, commit 138c362e1a2b)`,
    /// or `0.4.0 (schema 13)` for a development build.
    package static var described: String { "\(current) (schema \(schema)\(commit.isEmpty ? "" : ", commit \(commit)"))" }
}
