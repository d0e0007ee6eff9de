import AttestCrypto
import AttestStorage

/// `POST /v1/debug-token`: a build that cannot attest (the iOS Simulator, previews, CI) exchanges
/// a debug token an admin made for an ordinary access token, marked as debug.
extension TokenService {
    /// The prefix of a debug token's secret.
    package static let debugTokenPrefix = "dbg_"
    /// `dbg_` + base64url of 32 bytes.
    package static let debugTokenLength = 4 + 43

    /// One refusal for an unknown, expired, revoked or foreign debug token: a guess learns nothing.
    static let invalidDebugToken = ServiceError(
        .invalidDebugToken, .debugToken, "the debug token is unknown, expired or revoked, or belongs to another integration")

    /// An access token for `secret`, a live debug token of `clientID`'s active integration.
    /// 1. the clock agrees with the database's; 2. the secret has the debug token's shape (no
    /// lookup otherwise); 3. the debug token with that SHA-256 exists for this integration and is
    /// live; 4. its shared bucket has a mint left; 5. one transaction re-checks 3 under the debug
    /// token's row lock, checks the integration, inserts the token and counts the use.
    /// Each outcome is counted (`ServiceObserver.debugTokenExchanged`).
    package func exchangeDebugToken(clientID: ClientID, secret: String) throws(ServiceError) -> IssuedToken {
        do throws(ServiceError) {
            let issued = try mintForDebugToken(clientID: clientID, secret: secret)
            observer?.debugTokenExchanged(outcome: "ok", clientID: clientID.text)
            return issued
        } catch {
            observer?.debugTokenExchanged(outcome: error.subcode.identifier, clientID: nil)
            throw error
        }
    }

    private func mintForDebugToken(clientID: ClientID, secret: String) throws(ServiceError) -> IssuedToken {
        try requireAgreeingClock()
        guard secret.utf8.count == Self.debugTokenLength, secret.hasPrefix(Self.debugTokenPrefix) else {
            throw Self.invalidDebugToken
        }
        let now = clock.now()
        let hash = Digest.sha256(Array(secret.utf8))
        // Found by the SHA-256 of the whole secret, an index probe that reveals nothing by its timing.
        guard let debugToken = try stored({ () throws(StorageError) in try store.debugToken(secretHash: hash) }),
            debugToken.clientID == clientID.text, debugToken.isLive(at: now)
        else { throw Self.invalidDebugToken }
        try sharedLimit(.debugToken(id: debugToken.id), policy.debugTokenMints, now: now)
        let integration = try stored { () throws(StorageError) in try store.integration(clientID: debugToken.clientID) }
        guard let integration else { throw Self.invalidDebugToken }
        let token = Self.tokenPrefix + Base64Text.encode(try random.bytesOrFail(32), .url)
        let record = TokenRecord(
            tokenHash: Digest.sha256(Array(token.utf8)), clientID: integration.clientID, workspaceID: integration.workspaceID,
            keyID: debugToken.keyID, scope: policy.scope, issuedAt: now, expiresAt: now + policy.tokenLifetime,
            debugTokenID: debugToken.id)
        switch try stored({ () throws(StorageError) in try store.mintForDebugToken(record, at: now) }) {
        case .minted: break
        case .invalid: throw Self.invalidDebugToken
        case .integrationSuspended: throw ServiceError.integrationSuspended
        case .integrationRevoked: throw ServiceError.integrationRevoked
        }
        observer?.tokenIssued(debug: true)
        return IssuedToken(
            accessToken: token, expiresIn: policy.tokenLifetime, scope: policy.scope, workspaceID: integration.workspaceID, debug: true)
    }
}
