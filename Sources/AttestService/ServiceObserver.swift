/// What the service reports as it works, for the metrics (the HTTP layer implements it).
package protocol ServiceObserver: Sendable {
    /// A receipt was checked: at attestation (`ATTEST`) or after an exchange with Apple (`RECEIPT`).
    /// `verdict` is `valid` or the `receipt_*` check that refused it.
    func receiptVerified(clientID: String, verdict: String, riskMetric: Int?)
}
