// Darwin's C library, for the client's `#if canImport(Darwin)` lines: the POSIX calls they make
// have the same Swift signatures in Glibc, which this module re-exports.
@_exported import Glibc
