// Test support, linked by test targets and the attest-bench developer tool only, never by a
// product (as HummingbirdTesting is never linked by a server). Tests that build synthetic
// devices get the product's simulator with this one import.
@_exported import AttestSimulator
