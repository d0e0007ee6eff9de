public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The app's side of attestd: `try await client.token()` gives a valid access token, running
/// App Attest as needed (docs/CLIENT.md).
///
/// The first call on a device asks attestd for a challenge, makes a key, attests it with SHA-256
/// of the challenge's bytes as the client data hash and exchanges the attestation for a token.
/// Later calls return the token from memory while more than the renewal margin of its life
/// remains, then refresh it by assertion (a challenge, an assertion, `/v1/token`); a client made
/// after an app restart finds the key in its `KeyIDStore` and refreshes by assertion too. Any
/// number of concurrent calls share one attestation or refresh. Nothing is logged unless
/// `Configuration.log` is set. Make one client for the app's lifetime and share it (a `static let`):
/// two clients of one key store take turns and never attest two keys (`KeyCoordination`), but
/// each keeps its own token. A build that cannot attest uses `init(configuration:debugToken:)`.
public actor AttestClient {
    /// Where attestd is and who the app is.
    public struct Configuration: Sendable {
        /// attestd's base URL (`https://attest.example.com`, or with a path prefix).
        public var baseURL: URL
        /// The integration's client ID (`clid_` and 32 lower-case hex digits), from
        /// `attestctl integration create`. Not a secret.
        public var clientID: String
        /// The clock that decides whether the cached token is still fresh.
        public var clock: @Sendable () -> Date
        /// The session whose configuration (proxies, headers, protocol classes) the client's own
        /// session copies; its timeouts are set from `requestTimeout`.
        public var session: URLSession
        /// How long before its expiry a token is renewed (at most half its lifetime).
        public var renewalMargin: TimeInterval
        /// How long one call keeps retrying connection failures, 429, 503 and other 5xx. A call
        /// that needs the network ends within `retryBudget` + `requestTimeout`, requests included.
        public var retryBudget: TimeInterval
        /// The longest one request may take, on every platform (a stalled attestd is given up on).
        public var requestTimeout: TimeInterval
        /// The hosts of your API (`api.example.com`): `authorize(_:)` attaches the token only to a
        /// request for one of them, over https (http only for a loopback host). Empty: it attaches
        /// it to none and throws `.hostNotAllowed`.
        public var apiHosts: Set<String>
        /// Told what the client does, in sentences, for the app's own log; nil (the default) logs
        /// nothing. Never a token, key ID, assertion or debug token.
        public var log: (@Sendable (String) -> Void)?

        public init(
            baseURL: URL, clientID: String, clock: @escaping @Sendable () -> Date = Date.init, session: URLSession = .shared,
            renewalMargin: TimeInterval = 300, retryBudget: TimeInterval = 30, requestTimeout: TimeInterval = 15,
            apiHosts: Set<String> = [], log: (@Sendable (String) -> Void)? = nil
        ) {
            self.baseURL = baseURL
            self.clientID = clientID
            self.clock = clock
            self.session = session
            self.renewalMargin = renewalMargin
            self.retryBudget = retryBudget
            self.requestTimeout = requestTimeout
            self.apiHosts = Set(apiHosts.map { $0.lowercased() })
            self.log = log
        }
    }

    let configuration: Configuration
    let device: any AppAttestDevice
    let keyStore: any KeyIDStore
    /// The debug token a client made with `init(configuration:debugToken:)` exchanges instead of
    /// attesting (`device` and `keyStore` are then never used).
    let debugToken: String?
    let service: ServiceConnection
    private let transport: any Transport
    /// Retry budgets, call deadlines and challenge lifetimes are measured on it.
    let clock: any MonotonicClock

    /// The App Attest key as far as this process knows (the flow's state).
    var key = KeyState.unloaded
    /// A challenge not yet presented, kept for the next attestation when Apple's service was
    /// unavailable (Apple asks for the retry to use the same client data hash).
    var unspentChallenge: IssuedChallenge?
    /// Set when attestd answers `integration_revoked`: revocation is permanent, so every later
    /// call throws at once, with no request that could only be refused.
    var revoked = false

    /// The token in memory and when to renew it.
    private var cached: (token: AccessToken, renewAt: Date)?
    /// Whether the key store's kept token was read (once, at the first call).
    private var keptTokenRead = false
    /// The streams of `tokenUpdates()`, and the token they were last told of.
    private var observers: [UInt64: AsyncStream<AccessToken?>.Continuation] = [:]
    private var announced: AccessToken?
    private var nextObserver: UInt64 = 0
    /// The attestation or refresh in flight, which every caller waits for.
    private var flight: Task<Void, Never>?
    /// True when every caller of the flight was cancelled, so it was cancelled too.
    private var flightCancelled = false
    private var waiters: [UInt64: CheckedContinuation<AccessToken, any Error>] = [:]
    private var nextWaiter: UInt64 = 0

    public init(configuration: Configuration, device: any AppAttestDevice, keyStore: any KeyIDStore) {
        self.init(configuration: configuration, device: device, keyStore: keyStore, debugToken: nil)
    }

    /// A client for builds that cannot attest (the iOS Simulator, SwiftUI previews, UI tests, CI):
    /// `token()` exchanges `debugToken` (`dbg_...`, made by a workspace admin for this
    /// integration) at `POST /v1/debug-token` for access tokens marked as debug, with the same
    /// single flight, renewal, retry budget and errors as the attested path. It never touches
    /// DeviceCheck or a key store. Never ship a debug token in a release build (docs/CLIENT.md).
    public init(configuration: Configuration, debugToken: String) {
        self.init(configuration: configuration, device: NoAppAttest(), keyStore: NoAppAttest(), debugToken: debugToken)
    }

    private init(configuration: Configuration, device: any AppAttestDevice, keyStore: any KeyIDStore, debugToken: String?) {
        self.init(
            configuration: configuration, device: device, keyStore: keyStore, debugToken: debugToken,
            transport: URLSessionTransport(configuration: configuration.session.configuration, timeout: configuration.requestTimeout),
            clock: SystemMonotonicClock())
    }

    /// A client whose requests go through `transport` and whose pauses and deadlines are
    /// measured on `clock`: the package's tests give an in-process transport and a manual clock.
    /// A nil `device` and `keyStore` with a `debugToken` make a debug-token client.
    package init(
        configuration: Configuration, device: (any AppAttestDevice)?, keyStore: (any KeyIDStore)?, debugToken: String?,
        transport: any Transport, clock: any MonotonicClock
    ) {
        self.configuration = configuration
        self.device = device ?? NoAppAttest()
        self.keyStore = keyStore ?? NoAppAttest()
        self.debugToken = debugToken
        self.transport = transport
        self.clock = clock
        service = ServiceConnection(
            baseURL: configuration.baseURL, clientID: configuration.clientID, transport: transport, timeout: configuration.requestTimeout,
            clock: clock)
    }

    deinit { transport.close() }

    /// A token with more than the renewal margin of its life left: the one in memory, or a new
    /// one (by attestation the first time on this device, by assertion after). Throws
    /// `AttestClientError`, or `CancellationError` when the calling task is cancelled.
    public func token() async throws -> AccessToken {
        try await token(forcingRefresh: false)
    }

    /// `token()`, but with `forcingRefresh` a token the API refused (401) is not returned again:
    /// a new one is fetched by assertion.
    public func token(forcingRefresh: Bool) async throws -> AccessToken {
        if revoked { throw AttestClientError.integrationRevoked }
        if !keptTokenRead {
            // A relaunch needs no round trip while the token the key store kept is fresh.
            keptTokenRead = true
            if cached == nil, let kept = try? keyStore.loadToken(scope: tokenScope), ServiceConnection.isAccessToken(kept.value) {
                cached = (kept, renewal(of: kept))
            }
        }
        if forcingRefresh {
            cached = nil
        } else if let cached, configuration.clock() < cached.renewAt {
            return cached.token
        }
        try Task.checkCancellation()
        let id = nextWaiter
        nextWaiter += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiters[id] = continuation
                // Single flight: the first caller starts the work, every other one waits for it.
                if flight == nil { startFlight() }
            }
        } onCancel: {
            Task { await self.abandon(id) }
        }
    }

    /// `request` with `Authorization: Bearer <token>` from `token()`, when it is for one of
    /// `Configuration.apiHosts` over https (or http to a loopback host); otherwise
    /// `.hostNotAllowed`, before any token is fetched: the token never goes anywhere else.
    public func authorize(_ request: URLRequest) async throws -> URLRequest {
        guard let url = request.url, let host = url.host?.lowercased(), configuration.apiHosts.contains(host),
            url.scheme?.lowercased() == "https" || (url.scheme?.lowercased() == "http" && Self.isLoopback(host))
        else { throw AttestClientError.hostNotAllowed(request.url?.host ?? "") }
        let token = try await token()
        var request = request
        request.setValue("Bearer \(token.value)", forHTTPHeaderField: "Authorization")
        return request
    }

    /// `localhost`, `::1`, or an IPv4 literal in 127.0.0.0/8 (never a name that starts with 127.).
    private static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { part in UInt8(part).map { String($0) == part } ?? false }
    }

    /// What a kept token belongs to: this client ID at this attestd.
    private var tokenScope: String { "\(configuration.clientID) \(configuration.baseURL.absoluteString)" }

    /// Every change of the client's token from now on: a new token, or nil when the client drops
    /// the one it had (the integration revoked or suspended, the device blocked, `resetKey()`).
    public func tokenUpdates() -> AsyncStream<AccessToken?> {
        let id = nextObserver
        nextObserver += 1
        let (stream, continuation) = AsyncStream<AccessToken?>.makeStream()
        observers[id] = continuation
        continuation.onTermination = { _ in Task { await self.stopObserving(id) } }
        return stream
    }

    private func stopObserving(_ id: UInt64) { observers[id] = nil }

    /// Starts over with a new App Attest key: forgets the saved key ID and the kept token, so the
    /// next `token()` makes and attests a new key. The one way past `.deviceBlocked` besides the
    /// operator's unblocking, and only when the app decides to (e.g. the user asks to reset): the
    /// client never does it by itself. Waits for a call in flight to end first.
    public func resetKey() async throws {
        while let flight { await flight.value }
        let turn = try await KeyTurn.acquire(
            keyStore.coordination, deadline: clock.now() + configuration.retryBudget + configuration.requestTimeout, clock: clock)
        defer { turn.release() }
        try keyStore.remove()
        try keyStore.saveToken(nil, scope: tokenScope)
        key = .absent
        unspentChallenge = nil
        setCached(nil)
        configuration.log?("the App Attest key was reset: the next call attests a new key")
    }

    /// The instant to renew `token` at: the renewal margin before expiry, at most half its life.
    private func renewal(of token: AccessToken) -> Date {
        let margin = min(configuration.renewalMargin, token.expiresAt.timeIntervalSince(configuration.clock()) / 2)
        return token.expiresAt.addingTimeInterval(-max(margin, 0))
    }

    /// Replaces the token in memory (and in the key store), telling the observers of a change.
    private func setCached(_ token: AccessToken?) {
        cached = token.map { ($0, renewal(of: $0)) }
        try? keyStore.saveToken(token, scope: tokenScope)
        guard announced != token else { return }
        announced = token
        for observer in observers.values { observer.yield(token) }
    }

    private func startFlight() {
        flightCancelled = false
        // While the token in hand still works, a renewal that meets an outage gives up at once and
        // the caller gets that token (the next call tries again), rather than waiting out the budget.
        let renewing = cached.map { configuration.clock() < $0.token.expiresAt } ?? false
        let budget = renewing ? 0 : configuration.retryBudget
        flight = Task {
            let result: Result<AccessToken, any Error>
            do {
                result = .success(try await obtain(retryBudget: budget))
            } catch {
                result = .failure(error)
            }
            land(result)
        }
    }

    /// The flight's end: the token is cached and every waiter answered.
    private func land(_ result: Result<AccessToken, any Error>) {
        flight = nil
        if flightCancelled, case .failure = result, !waiters.isEmpty {
            // Cancelled for callers that left; callers that came since get a flight of their own.
            startFlight()
            return
        }
        var outcome = result
        switch result {
        case .success(let token):
            setCached(token)
            configuration.log?("new access token, valid \(Int(token.expiresAt.timeIntervalSince(configuration.clock()))) s")
        case .failure(let error as AttestClientError):
            configuration.log?("no new access token: \(error.localizedDescription)")
            switch error {
            case .transport, .serviceUnavailable, .rateLimited:
                // Renewal failed for a reason that will pass: the token in hand still works.
                if let cached, configuration.clock() < cached.token.expiresAt { outcome = .success(cached.token) }
            case .integrationRevoked, .integrationSuspended, .deviceBlocked, .integrationNotFound:
                setCached(nil)
            case .unsupportedDevice, .rejected, .hostNotAllowed:
                break
            }
        case .failure:
            break
        }
        let answered = waiters
        waiters = [:]
        for continuation in answered.values { continuation.resume(with: outcome) }
    }

    /// A cancelled caller stops waiting at once; when no caller is left, the flight is cancelled.
    private func abandon(_ id: UInt64) {
        guard let continuation = waiters.removeValue(forKey: id) else { return }
        continuation.resume(throwing: CancellationError())
        if waiters.isEmpty, let flight {
            flightCancelled = true
            flight.cancel()
        }
    }
}

/// What a debug-token client holds in place of a device and a key store: nothing. Its path never
/// calls them (`obtain` exchanges the debug token first); were it ever to, it would say there is
/// no App Attest here.
struct NoAppAttest: AppAttestDevice, KeyIDStore {
    var isSupported: Bool { false }
    func generateKey() async throws -> String { throw AppAttestDeviceError.featureUnsupported }
    func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data { throw AppAttestDeviceError.featureUnsupported }
    func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data {
        throw AppAttestDeviceError.featureUnsupported
    }
    func load() throws -> String? { nil }
    func save(_ keyID: String) throws {}
    func remove() throws {}
}
