import AttestCore
import AttestStorage

/// The receipt policy: each attestation's receipt checked and recorded, and the integration's
/// policy applied at every refresh.
extension TokenService {
    /// The verdict on the attestation's receipt; throws it when the integration requires a valid one.
    func receiptState(
        of verified: VerifiedAttestation, integration: IntegrationRecord, now: Int64
    ) throws(ServiceError) -> ReceiptState? {
        guard let receipts else { return nil }
        let state: ReceiptState
        do throws(AttestError) {
            let receipt = try receipts.verifyAttestationReceipt(of: verified, at: now)
            state = ReceiptState(
                verdict: .valid, type: receipt.type, createdAt: receipt.createdAt, expiresAt: receipt.expiresAt,
                riskMetric: receipt.riskMetric, refreshedAt: nil)
        } catch {
            state = ReceiptState(
                verdict: .refused(check: error.code.identifier), type: nil, createdAt: nil, expiresAt: nil, riskMetric: nil,
                refreshedAt: nil)
            observer?.receiptVerified(clientID: integration.clientID, verdict: state.verdict.description, riskMetric: nil)
            // Why not refuse by default: some genuine early receipts are refused by strict CMS
            // verification; an integration that requires valid receipts opts in.
            if integration.policy.requireValidReceipt {
                throw ServiceError(.attestationRejected, .check(error.code), "the receipt does not verify: \(error.reason)")
            }
            return state
        }
        observer?.receiptVerified(clientID: integration.clientID, verdict: state.verdict.description, riskMetric: state.riskMetric)
        return state
    }

    /// The integration's receipt policy as it is now, applied at every refresh: a policy switched
    /// on after a device attested applies to it too.
    static func checkReceiptPolicy(_ policy: IntegrationPolicy, device: DeviceRecord, now: Int64, grace: Int64) throws(ServiceError) {
        if policy.requireValidReceipt, device.receiptState?.verdict != .valid {
            throw ServiceError(
                .receiptRequired, .receiptRequired, "the integration requires a valid receipt and this device's did not verify")
        }
        guard let maximum = policy.maxRiskMetric else { return }
        if let metric = device.receiptState?.riskMetric {
            guard metric <= maximum else {
                throw ServiceError(
                    .riskMetricExceeded, .riskMetricExceeded,
                    "this device's fraud-risk metric \(metric) exceeds the integration's \(maximum)")
            }
        } else if now - device.createdAt > grace {
            // Why fail closed: stripping the receipt must not be a way around the limit.
            throw ServiceError(
                .riskMetricExceeded, .riskMetricUnknown,
                "no fraud-risk metric is known for this device \(grace / 3600) hours after its attestation, and the integration limits it")
        }
    }
}
