package import AttestAppleClient
package import AttestCore
import AttestCrypto
package import AttestObservability
package import AttestService
package import AttestStorage
import Foundation
import Synchronization

/// How one exchange with Apple ended, as counted in `attestd_receipt_refreshes_total{result}`.
package enum RefreshOutcome: String, Sendable, Hashable, CaseIterable {
    /// 200: a new receipt verified and stored, with its risk metric.
    case refreshed
    /// 304: Apple has nothing newer; the stored receipt is confirmed.
    case notModified = "not_modified"
    /// 400: Apple refused the request (a malformed receipt, or the wrong environment's host).
    case badRequest = "bad_request"
    /// 401: Apple refused the JWT (wrong key ID, team ID or key, or a revoked key).
    case unauthorized
    /// 404: Apple holds no data for this receipt (it keeps 30 days).
    case notFound = "not_found"
    /// 429: too many requests.
    case rateLimited = "rate_limited"
    /// 5xx: Apple's side failed.
    case serverError = "server_error"
    /// Another status.
    case otherStatus = "other_status"
    /// No answer: DNS, connect, TLS or timeout.
    case networkError = "network_error"
    /// A 200 whose body is not a base64 receipt.
    case invalidResponse = "invalid_response"
    /// A 200 receipt that did not verify (kept out of the store).
    case invalidReceipt = "invalid_receipt"
    /// The integration's DeviceCheck key could not be unsealed or used: no request was made.
    case keyUnavailable = "key_unavailable"
    /// The store failed to read candidates or to write a result.
    case storageError = "storage_error"
}

/// The refresher's settings (`attestd --receipt-refresh-interval`, and bounds that are not options).
package struct ReceiptRefresherSettings: Sendable {
    /// Seconds between passes.
    package var intervalSeconds = 300
    /// At most this many exchanges per pass: the bound on the work (and on Apple's traffic) per interval.
    package var batchSize = 100
    /// A receipt is exchanged once it is this old: field 19 says Apple refreshes at creation + 24 h.
    package var minimumAgeSeconds: Int64 = 86_400
    /// The first wait after a failure; it doubles with each further failure, up to `maximumBackoffSeconds`.
    package var initialBackoffSeconds: Int64 = 60
    package var maximumBackoffSeconds: Int64 = 3_600
    /// The longest `Retry-After` honoured (a longer one is cut to this).
    package var maximumRetryAfterSeconds: Int64 = 86_400
    /// At most this many devices are remembered as backing off (the oldest entries go first).
    package var maximumBackoffEntries = 10_000

    /// The defaults: every 300 s, 100 exchanges, receipts older than 24 h, backoff 1 min to 1 h.
    package init() {}
}

/// Keeps devices' fraud-risk metrics fresh, off the request path: every interval one thread takes
/// a bounded batch of devices whose receipt is at least a day old (of integrations whose owner
/// registered a DeviceCheck key), exchanges each receipt with Apple one at a time, and stores what
/// comes back. A failure is logged, counted and backed off (per integration for 401, 429, 5xx and
/// network errors; per device for 400, 404 and bad answers); it never touches a device's tokens.
///
/// Never logged: the JWT, the DeviceCheck key, the secrets key, receipt bytes.
package final class ReceiptRefresher: Sendable {
    private struct Backoff {
        var until: Int64
        var delay: Int64
    }

    private struct State {
        var outcomes: [RefreshOutcome: Int] = [:]
        var integrationBackoff: [String: Backoff] = [:]
        var deviceBackoff: [[UInt8]: Backoff] = [:]
        var stopping = false
        var started = false
    }

    /// What a pass needs of one integration: its JWT and the App ID fallback.
    private struct Credentials {
        let jwt: String
        let fallbackAppID: String?
    }

    let store: any ReceiptStore
    let apple: AppleAttestationDataClient
    let verifier: ReceiptVerifier
    let secretsKey: [UInt8]
    let clock: any WallClock
    let logger: Logger
    package let settings: ReceiptRefresherSettings
    private let state = Mutex(State())
    /// Held for a whole pass: one pass (one request in flight) at a time.
    private let passLock = Mutex(())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// A refresher; nothing runs until `start()` (or a test's `runPass()`).
    package init(
        store: any ReceiptStore, apple: AppleAttestationDataClient, verifier: ReceiptVerifier, secretsKey: [UInt8], clock: any WallClock,
        logger: Logger, settings: ReceiptRefresherSettings = ReceiptRefresherSettings()
    ) {
        (self.store, self.apple, self.verifier, self.secretsKey, self.clock, self.logger, self.settings) = (
            store, apple, verifier, secretsKey, clock, logger, settings
        )
    }

    /// Every outcome counted since start, by outcome (each present, zero when none).
    package var outcomes: [RefreshOutcome: Int] {
        let counted = state.withLock { $0.outcomes }
        return Dictionary(uniqueKeysWithValues: RefreshOutcome.allCases.map { ($0, counted[$0] ?? 0) })
    }

    /// The counters as Prometheus exposition lines (`attestd_receipt_refreshes_total{result}`).
    package var metricsText: PrometheusText { Self.metricsText(outcomes) }

    /// The same counters, every one 0, for a node that runs no refresher.
    package static var idleMetricsText: PrometheusText {
        metricsText(Dictionary(uniqueKeysWithValues: RefreshOutcome.allCases.map { ($0, 0) }))
    }

    private static func metricsText(_ outcomes: [RefreshOutcome: Int]) -> PrometheusText {
        var out = PrometheusText()
        out.family(
            "attestd_receipt_refreshes_total", .counter,
            help: "Exchanges of device receipts with Apple's attestationData endpoint, by result.")
        for (outcome, count) in outcomes.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            out.sample("attestd_receipt_refreshes_total", ["result": outcome.rawValue], count)
        }
        return out
    }

    /// Starts the background thread: a pass at once, then one every `intervalSeconds`.
    package func start() {
        let thread = Thread { [self] in
            while !state.withLock({ $0.stopping }) {
                _ = runPass()
                if wake.wait(timeout: .now() + .seconds(settings.intervalSeconds)) == .success { continue }
            }
            finished.signal()
        }
        thread.name = "attestd-receipt-refresher"
        state.withLock { $0.started = true }
        thread.start()
    }

    /// Stops the thread after the exchange in flight (at most the client's total timeout).
    package func stop() {
        let started = state.withLock { state in
            state.stopping = true
            return state.started
        }
        guard started else { return }
        wake.signal()
        if finished.wait(timeout: .now() + .seconds(30)) == .timedOut {
            logger.log(.warning, "the receipt refresher did not stop within 30 s")
        }
    }

    /// One pass: takes the due devices not backing off (at most `batchSize`) and exchanges each
    /// receipt. Returns this pass's outcomes.
    @discardableResult
    package func runPass() -> [RefreshOutcome: Int] {
        passLock.withLock { _ in pass() }
    }

    private func pass() -> [RefreshOutcome: Int] {
        let now = clock.now()
        var counted: [RefreshOutcome: Int] = [:]
        func count(_ outcome: RefreshOutcome) {
            counted[outcome, default: 0] += 1
            state.withLock { $0.outcomes[outcome, default: 0] += 1 }
        }
        let candidates: [DeviceRecord]
        do {
            // Over-read: devices backing off stay due in the store and would otherwise fill every batch.
            candidates = try store.receiptRefreshCandidates(dueBefore: now - settings.minimumAgeSeconds, limit: settings.batchSize * 4)
        } catch {
            logger.log(.error, "receipt refresh: cannot read the devices due", ["error": .string(error.reason)])
            count(.storageError)
            return counted
        }
        let due = state.withLock { state in
            // A backoff that ended is remembered a while longer, so that the next failure doubles it;
            // it is forgotten after twice the longest wait without a failure (or at the next success).
            let forgetBefore = now - 2 * settings.maximumBackoffSeconds
            state.integrationBackoff = state.integrationBackoff.filter { $0.value.until > forgetBefore }
            state.deviceBackoff = state.deviceBackoff.filter { $0.value.until > forgetBefore }
            return candidates.filter { device in
                (state.integrationBackoff[device.clientID]?.until ?? .min) <= now
                    && (state.deviceBackoff[device.keyID]?.until ?? .min) <= now
            }
        }.prefix(settings.batchSize)
        var order: [String] = []
        var groups: [String: [DeviceRecord]] = [:]
        for device in due {
            if groups[device.clientID] == nil { order.append(device.clientID) }
            groups[device.clientID, default: []].append(device)
        }
        for clientID in order {
            if state.withLock({ $0.stopping }) { break }
            guard let credentials = credentials(clientID: clientID, at: now) else {
                count(.keyUnavailable)
                backOff(integration: clientID, at: now, retryAfter: nil)
                continue
            }
            for device in groups[clientID] ?? [] {
                if state.withLock({ $0.stopping || ($0.integrationBackoff[clientID]?.until ?? .min) > now }) { break }
                count(exchange(device, credentials: credentials, at: now))
            }
        }
        if !counted.isEmpty {
            logger.log(
                .info, "receipt refresh pass",
                fields: counted.sorted { $0.key.rawValue < $1.key.rawValue }.map { ("refreshes.\($0.key.rawValue)", .int($0.value)) })
        }
        return counted
    }

    /// Unseals the integration's DeviceCheck key and signs this pass's JWT; nil (logged) when it cannot.
    private func credentials(clientID: String, at now: Int64) -> Credentials? {
        let integration: IntegrationRecord
        let sealed: (keyID: String, sealedKey: [UInt8])
        do {
            guard let record = try store.integration(clientID: clientID), let key = try store.fraudKey(clientID: clientID) else {
                return nil
            }
            integration = record
            sealed = key
        } catch {
            logger.log(
                .error, "receipt refresh: cannot read the integration", ["client.id": .string(clientID), "error": .string(error.reason)])
            return nil
        }
        do {
            let pem = try SealedBox.open(
                sealed.sealedKey, key: secretsKey, associatedData: FraudKeySealing.associatedData(clientID: clientID, keyID: sealed.keyID))
            let key = try PrivateKey(pem: String(decoding: pem, as: UTF8.self))
            let jwt = try AppleJWT.sign(keyID: sealed.keyID, teamID: integration.teamID, issuedAt: now, key: key)
            return Credentials(jwt: jwt, fallbackAppID: integration.bundleIDs.first.map { integration.teamID + "." + $0 })
        } catch {
            // The reason names the failed operation only (CryptoError never quotes key bytes).
            logger.log(
                .error, "receipt refresh: the integration's DeviceCheck key cannot be used (wrong --secrets-key-file, or set it again)",
                ["client.id": .string(clientID), "fraud_key.id": .string(sealed.keyID), "error": .string(error.code.rawValue)])
            return nil
        }
    }

    /// One exchange and what it leaves in the store.
    private func exchange(_ device: DeviceRecord, credentials: Credentials, at now: Int64) -> RefreshOutcome {
        let answer = apple.exchange(receipt: device.receipt, jwt: credentials.jwt, environment: device.environment.rawValue)
        let keyID = Hex.encode(device.keyID)
        func failed(_ outcome: RefreshOutcome, status: Int?, detail: String, perIntegration: Bool, retryAfter: Int? = nil) -> RefreshOutcome
        {
            var fields: [(String, LogValue)] = [
                ("client.id", .string(device.clientID)), ("device.key_id", .string(keyID)), ("result", .string(outcome.rawValue)),
            ]
            if let status { fields.append(("apple.status", .int(status))) }
            fields.append(("detail", .string(detail)))
            let delay =
                perIntegration
                ? backOff(integration: device.clientID, at: now, retryAfter: retryAfter)
                : backOff(device: device.keyID, at: now)
            fields.append(("backoff_seconds", .int(Int(delay))))
            logger.log(.warning, "receipt refresh failed", fields: fields)
            return outcome
        }
        switch answer {
        case .receipt(let receipt):
            let appID: AppID
            do {
                appID = try AppID(device.appID ?? credentials.fallbackAppID ?? "")
            } catch {
                return failed(.invalidReceipt, status: 200, detail: "no App ID to verify against", perIntegration: false)
            }
            let verified: VerifiedReceipt
            do {
                // Why no certificate comparison: attestd keeps the attestation's receipt, not its
                // credential certificate. The receipt came over TLS from Apple in answer to this
                // device's receipt, and Apple's signature and App ID are checked here.
                verified = try verifier.verify(
                    ReceiptInput(receipt: receipt, appID: appID, certificate: nil, expectedType: .receipt, time: now))
            } catch {
                return failed(.invalidReceipt, status: 200, detail: error.code.identifier, perIntegration: false)
            }
            // Why: the receipt in attStmt is not covered by the attestation's signature, so the
            // one a device presented may be another device's. Apple's answer names the credential
            // certificate it is about (field 3): it must be the one this key attested with, as
            // recorded at attestation. The environment follows: the certificate is the key's, and
            // the key's environment is what its attestation proved.
            guard let expected = device.credentialSHA256, verified.certificateSHA256 == expected else {
                return failed(.invalidReceipt, status: 200, detail: AttestErrorCode.receiptCertificate.identifier, perIntegration: false)
            }
            let receiptState = ReceiptState(
                verdict: .valid, type: verified.type, createdAt: verified.createdAt, expiresAt: verified.expiresAt,
                riskMetric: verified.riskMetric, refreshedAt: now)
            do {
                try store.updateReceipt(keyID: device.keyID, receipt: receipt, state: receiptState)
            } catch {
                logger.log(
                    .error, "receipt refresh: cannot store the new receipt",
                    ["device.key_id": .string(keyID), "error": .string(error.reason)])
                return .storageError
            }
            succeeded(device)
            logger.log(
                .debug, "receipt refreshed",
                ["client.id": .string(device.clientID), "device.key_id": .string(keyID), "risk_metric": .int(verified.riskMetric ?? -1)])
            return .refreshed
        case .notModified:
            do {
                try store.touchReceipt(keyID: device.keyID, at: now)
            } catch {
                logger.log(
                    .error, "receipt refresh: cannot record the 304", ["device.key_id": .string(keyID), "error": .string(error.reason)])
                return .storageError
            }
            succeeded(device)
            return .notModified
        case .refused(let status, let retryAfter):
            switch status {
            case 400: return failed(.badRequest, status: status, detail: "Apple refused the request", perIntegration: false)
            case 401:
                return failed(.unauthorized, status: status, detail: "Apple refused the JWT (key ID, team ID or key)", perIntegration: true)
            case 404: return failed(.notFound, status: status, detail: "Apple holds no data for this receipt", perIntegration: false)
            case 429:
                return failed(.rateLimited, status: status, detail: "rate limited", perIntegration: true, retryAfter: retryAfter)
            case 500...599:
                return failed(.serverError, status: status, detail: "Apple's server failed", perIntegration: true, retryAfter: retryAfter)
            default: return failed(.otherStatus, status: status, detail: "unexpected status", perIntegration: false)
            }
        case .malformed(let detail):
            return failed(.invalidResponse, status: 200, detail: detail, perIntegration: false)
        case .unreachable(let error):
            return failed(.networkError, status: nil, detail: error.description, perIntegration: true)
        }
    }

    /// A success clears the device's backoff and its integration's.
    private func succeeded(_ device: DeviceRecord) {
        state.withLock { state in
            state.deviceBackoff[device.keyID] = nil
            state.integrationBackoff[device.clientID] = nil
        }
    }

    /// Backs the integration off (doubling, capped; at least `Retry-After`); returns the wait.
    @discardableResult
    private func backOff(integration clientID: String, at now: Int64, retryAfter: Int?) -> Int64 {
        state.withLock { state in
            let next = nextDelay(after: state.integrationBackoff[clientID])
            let wait = max(next, min(Int64(retryAfter ?? 0), settings.maximumRetryAfterSeconds))
            state.integrationBackoff[clientID] = Backoff(until: now + wait, delay: next)
            return wait
        }
    }

    private func backOff(device keyID: [UInt8], at now: Int64) -> Int64 {
        state.withLock { state in
            let next = nextDelay(after: state.deviceBackoff[keyID])
            if state.deviceBackoff.count >= settings.maximumBackoffEntries, state.deviceBackoff[keyID] == nil,
                let soonest = state.deviceBackoff.min(by: { $0.value.until < $1.value.until })?.key
            {
                state.deviceBackoff[soonest] = nil
            }
            state.deviceBackoff[keyID] = Backoff(until: now + next, delay: next)
            return next
        }
    }

    private func nextDelay(after previous: Backoff?) -> Int64 {
        guard let previous else { return settings.initialBackoffSeconds }
        return min(previous.delay * 2, settings.maximumBackoffSeconds)
    }
}
