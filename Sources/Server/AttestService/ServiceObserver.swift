/// What was verified.
package enum VerificationKind: String, Sendable {
    case attestation
    case assertion
}

/// What the service reports as it works, for the metrics (the HTTP layer implements it).
package protocol ServiceObserver: Sendable {
    /// A receipt was checked: at attestation (`ATTEST`) or after an exchange with Apple (`RECEIPT`).
    /// `verdict` is `valid` or the `receipt_*` check that refused it.
    func receiptVerified(clientID: String, verdict: String, riskMetric: Int?)
    /// An attestation or assertion was verified (`outcome` `ok`) or refused (the check or field
    /// that failed). `clientID` is the stored client ID of the integration it was for, once the
    /// integration was found; nil before.
    func verificationFinished(_ kind: VerificationKind, outcome: String, clientID: String?)
    /// An access token was issued: to an attested device, or for a debug token.
    func tokenIssued(debug: Bool)
    /// A debug token was exchanged (`outcome` `ok`, `clientID` its integration's) or refused (the
    /// refusal's reason; `clientID` nil: a refusal names no integration it could be sure of).
    func debugTokenExchanged(outcome: String, clientID: String?)
}

/// Several observers told of everything, in order (the metrics, and the verification counts).
package struct ServiceObservers: ServiceObserver {
    package let all: [any ServiceObserver]

    package init(_ all: [any ServiceObserver]) { self.all = all }

    package func receiptVerified(clientID: String, verdict: String, riskMetric: Int?) {
        for observer in all { observer.receiptVerified(clientID: clientID, verdict: verdict, riskMetric: riskMetric) }
    }

    package func verificationFinished(_ kind: VerificationKind, outcome: String, clientID: String?) {
        for observer in all { observer.verificationFinished(kind, outcome: outcome, clientID: clientID) }
    }

    package func tokenIssued(debug: Bool) {
        for observer in all { observer.tokenIssued(debug: debug) }
    }

    package func debugTokenExchanged(outcome: String, clientID: String?) {
        for observer in all { observer.debugTokenExchanged(outcome: outcome, clientID: clientID) }
    }
}
