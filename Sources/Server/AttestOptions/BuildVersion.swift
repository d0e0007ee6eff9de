/// The release every binary of this package reports (`--version`, `/healthz`, `attestd_build_info`).
/// The Debian package's version (scripts/package) is read from here.
package enum BuildVersion {
    package static let current = "0.3.0"
}
