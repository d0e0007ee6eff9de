/// The release every binary of this package reports (`--version`, `/healthz`, `attestd_build_info`).
/// The Debian package's version (scripts/package) is read from here.
package enum BuildVersion {
    package static let current = "0.3.0"
    /// The newest migration this build knows and applies (its schema): several builds of one
    /// release in development differ by it (a test holds it to the embedded migrations).
    package static let schema = 12

    /// What `--version` prints after the program's name: `0.3.0 (schema 12)`.
    package static var described: String { "\(current) (schema \(schema))" }
}
