import AttestHTTP
import AttestHTTPServer
import Dispatch
import Foundation
import Synchronization

@testable import AttestClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client's monotonic clock, moved by the tests: a pause either passes at once, moving the
/// clock on by its length (`autoAdvance`, the default), or waits until the test advances the
/// clock past its end. Retries and budgets are then counted without real time passing.
final class ManualClock: MonotonicClock {
    private struct Sleeper {
        let wakeAt: TimeInterval
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: TimeInterval = 1000
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
        var pauses: [TimeInterval] = []
        var onPause: (@Sendable () -> Void)?
        /// Tasks waiting until this many pauses wait (`untilWaiting`).
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())
    let autoAdvance: Bool

    init(autoAdvance: Bool = true) {
        self.autoAdvance = autoAdvance
    }

    func now() -> TimeInterval { state.withLock { $0.now } }

    /// Every pause asked for, in order.
    var pauses: [TimeInterval] { state.withLock { $0.pauses } }
    /// Pauses waiting for the clock to move.
    var waiting: Int { state.withLock { $0.sleepers.count } }

    /// Returns once `count` pauses wait for the clock to move: the task that pauses is then
    /// where the test wants it, and no real time has to pass for it to get there.
    func untilWaiting(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                guard state.sleepers.count < count else { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Runs `hook` at each pause, before it passes.
    func onPause(_ hook: @escaping @Sendable () -> Void) { state.withLock { $0.onPause = hook } }

    func sleep(_ seconds: TimeInterval) async throws {
        try Task.checkCancellation()
        state.withLock { $0.onPause }?()
        if autoAdvance {
            state.withLock {
                $0.pauses.append(seconds)
                $0.now += max(seconds, 0)
            }
            await Task.yield()
            return
        }
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let satisfied = state.withLock { state in
                    state.pauses.append(seconds)
                    state.sleepers[id] = Sleeper(wakeAt: state.now + seconds, continuation: continuation)
                    let count = state.sleepers.count
                    defer { state.watchers.removeAll { $0.count <= count } }
                    return state.watchers.filter { $0.count <= count }.map(\.continuation)
                }
                for watcher in satisfied { watcher.resume() }
                if Task.isCancelled { wake(id, with: CancellationError()) }
            }
        } onCancel: {
            wake(id, with: CancellationError())
        }
    }

    /// Moves the clock on by `seconds`, ending the pauses it passes.
    func advance(_ seconds: TimeInterval) {
        let due = state.withLock { state -> [Sleeper] in
            state.now += seconds
            let due = state.sleepers.filter { $0.value.wakeAt <= state.now }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    private func wake(_ id: UInt64, with error: any Error) {
        let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
        sleeper?.continuation.resume(throwing: error)
    }
}

/// The client's requests answered by attestd's router in this process, without a socket: the
/// request is built as libmicrohttpd would hand it over, and the answer read back as URL loading
/// would. `router` says where attestd is now: nil when it is down (the request fails as a refused
/// connection would), `.silent` when it accepts and never answers (until the task is cancelled).
final class RouterTransport: Transport {
    enum Target {
        case router(Router)
        case down
        case silent
    }

    private let target: @Sendable () -> Target
    private let losses: LostAnswers
    /// Where the requests to a silent attestd wait (for their cancellation).
    private let silence: ManualClock

    init(
        losing losses: LostAnswers = LostAnswers(), silence: ManualClock = ManualClock(autoAdvance: false),
        _ target: @escaping @Sendable () -> Target
    ) {
        self.losses = losses
        self.silence = silence
        self.target = target
    }

    func close() {}

    func send(_ request: URLRequest, timeout: TimeInterval) async throws -> (Data, HTTPURLResponse) {
        try Task.checkCancellation()
        guard let url = request.url else { throw TransportFailure(description: "no URL") }
        switch target() {
        case .down:
            throw TransportFailure(description: "URLError -1004: Could not connect to the server.")
        case .silent:
            // Accepted and never answered: only the task's cancellation ends it here.
            try await silence.sleep(.infinity)
            throw CancellationError()
        case .router(let router):
            if let refusal = losses.refusal(for: url.path) {
                let body = Data(#"{"code":"\#(refusal.code)","reason":"\#(refusal.code)","status":\#(refusal.status)}"#.utf8)
                guard
                    let answer = HTTPURLResponse(
                        url: url, statusCode: refusal.status, httpVersion: "HTTP/1.1",
                        headerFields: ["Content-Type": "application/problem+json", "Retry-After": String(refusal.retryAfter)])
                else { throw TransportFailure(description: "no response") }
                return (body, answer)
            }
            let headers = (request.allHTTPHeaderFields ?? [:]).map { HTTPHeader(name: $0.key, value: $0.value) }
            let served = HTTPRequest(
                method: request.httpMethod ?? "GET", target: url.path, headers: headers, body: Array(request.httpBody ?? Data()),
                remoteAddress: "127.0.0.1")
            // On a thread of its own: the router waits for its offloaded handler.
            let response = await withCheckedContinuation { (continuation: CheckedContinuation<HTTPResponse, Never>) in
                DispatchQueue.global().async { continuation.resume(returning: router.respond(to: served)) }
            }
            // attestd did the work; the answer is lost on the way back, as on a dropped mobile connection.
            if losses.loses(url.path) { throw TransportFailure(description: "URLError -1005: The network connection was lost.") }
            var fields: [String: String] = [:]
            for header in response.headers { fields[header.name] = header.value }
            guard let answer = HTTPURLResponse(url: url, statusCode: response.status, httpVersion: "HTTP/1.1", headerFields: fields) else {
                throw TransportFailure(description: "no response")
            }
            return (Data(response.body), answer)
        }
    }
}

/// The answers a `RouterTransport` loses (the next one to a path, once armed) or gives in
/// attestd's place (a refusal with `Retry-After`, as a node whose database is locked answers).
final class LostAnswers: Sendable {
    struct Refusal: Sendable {
        let path: String
        let status: Int
        let code: String
        let retryAfter: Int
    }

    private let state = Mutex<(path: String?, lost: Int)>((nil, 0))
    private let refusals = Mutex<[Refusal]>([])

    /// The next request to `refusal.path` is answered with it, without reaching attestd.
    func refuse(_ refusal: Refusal) { refusals.withLock { $0.append(refusal) } }

    /// Refusals given so far, by path.
    let refused = Mutex<[String: Int]>([:])

    func refusal(for path: String) -> Refusal? {
        refusals.withLock { list in
            guard let index = list.firstIndex(where: { $0.path == path }) else { return nil }
            let refusal = list.remove(at: index)
            refused.withLock { $0[path, default: 0] += 1 }
            return refusal
        }
    }

    /// Loses the next answer to `path`.
    func arm(_ path: String) { state.withLock { $0.path = path } }

    /// Answers lost so far.
    var count: Int { state.withLock { $0.lost } }

    func loses(_ path: String) -> Bool {
        state.withLock { state in
            guard state.path == path else { return false }
            state.path = nil
            state.lost += 1
            return true
        }
    }
}
