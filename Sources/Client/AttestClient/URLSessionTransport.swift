package import Foundation

#if canImport(FoundationNetworking)
    package import FoundationNetworking
#endif

/// How the client's requests reach attestd: one request, its answer's body and head, or
/// `TransportFailure` (no answer), `CancellationError` (the calling task was cancelled). The
/// client's is `URLSessionTransport`; the package's tests call attestd's router in process.
package protocol Transport: Sendable {
    /// Sends `request` and gives up after `timeout` seconds, whatever the network does.
    func send(_ request: URLRequest, timeout: TimeInterval) async throws -> (Data, HTTPURLResponse)
    /// Frees what the transport holds, once the client is gone.
    func close()
}

/// `Transport` over a `URLSession` of the client's own, made from the app's session's
/// configuration (its proxies, headers and protocol classes) with the request timeout set on the
/// session itself. Two bounds hold on every platform, whatever URL loading does with its own
/// timeouts: a watchdog cancels a request that has not ended after its timeout, and an answer's
/// body is read only up to `maximumBody` bytes (a broken or hostile server cannot make the app
/// buffer megabytes). Invalidate it when done (`close`): a session keeps its delegate alive.
final class URLSessionTransport: Transport {
    /// The largest answer body read: attestd's answers are a few hundred bytes.
    static let maximumBody = 64 * 1024

    private let session: URLSession
    private let reader: AnswerReader

    init(configuration: URLSessionConfiguration, timeout: TimeInterval) {
        let configuration = configuration.copy() as? URLSessionConfiguration ?? .ephemeral
        // Whole seconds, at least one: URL loading on Linux (libcurl) rounds a fraction down, and a
        // timeout of 0 there ends every request at once. The watchdog holds the exact timeout.
        configuration.timeoutIntervalForRequest = Self.wholeSeconds(timeout)
        configuration.timeoutIntervalForResource = Self.wholeSeconds(timeout)
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        reader = AnswerReader()
        session = URLSession(configuration: configuration, delegate: reader, delegateQueue: nil)
    }

    /// Lets the requests under way end, then frees the session (and its delegate).
    package func close() { session.finishTasksAndInvalidate() }

    package func send(_ request: URLRequest, timeout: TimeInterval) async throws -> (Data, HTTPURLResponse) {
        var request = request
        request.timeoutInterval = Self.wholeSeconds(timeout)
        let task = session.dataTask(with: request)
        let reader = reader
        reader.register(task)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>) in
                guard reader.expect(task, continuation) else { return }
                // The watchdog: a no-op when the task has ended by then.
                DispatchQueue.global().asyncAfter(deadline: .now() + max(timeout, 0.001)) {
                    reader.fail(task, "no answer within \(Self.seconds(timeout))")
                }
                task.resume()
            }
        } onCancel: {
            reader.cancel(task)
        }
    }

    private static func wholeSeconds(_ value: TimeInterval) -> TimeInterval { max(1, value.rounded(.up)) }

    private static func seconds(_ value: TimeInterval) -> String {
        value >= 1 ? "\(Int(value.rounded())) s" : "\(Int((value * 1000).rounded())) ms"
    }
}

/// The delegate that collects each task's answer: its head, its body up to the cap, and how it
/// ended. Each task is registered when made and forgotten when its caller is answered; its caller
/// is answered exactly once, by whichever comes first: the end of the answer, the watchdog, the
/// cap, or the caller's cancellation (possibly before the task started: then it never starts).
/// Redirections are not followed: attestd never redirects, and a request's body (an attestation,
/// a debug token) goes nowhere else.
private final class AnswerReader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `tasks` is read and written only while holding `lock`.
    private typealias Answer = Result<(Data, HTTPURLResponse), any Error>
    private struct Pending {
        var continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>?
        var body = Data()
        var response: HTTPURLResponse?
        /// Set when the client gave up on it: why.
        var outcome: (any Error)?
        /// Set when the task ended before its caller waited for it.
        var ended: Answer?
    }

    private let lock = NSLock()
    private var tasks: [Int: Pending] = [:]

    func register(_ task: URLSessionTask) { lock.withLock { tasks[task.taskIdentifier] = Pending() } }

    /// Waits for `task`'s answer; false (and the continuation resumed) when the caller was
    /// answered already (cancelled before the task started): then the task must not start.
    func expect(_ task: URLSessionTask, _ continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>) -> Bool {
        let known = lock.withLock { () -> Answer? in
            guard var pending = tasks[task.taskIdentifier] else { return .failure(CancellationError()) }
            if let answer = pending.ended ?? pending.outcome.map({ Answer.failure($0) }) {
                tasks[task.taskIdentifier] = nil
                return answer
            }
            pending.continuation = continuation
            tasks[task.taskIdentifier] = pending
            return nil
        }
        guard let known else { return true }
        continuation.resume(with: known)
        return false
    }

    /// Gives up on `task` for `reason`: the answer is a `TransportFailure`.
    func fail(_ task: URLSessionTask, _ reason: String) { stop(task, TransportFailure(description: reason)) }

    /// The caller's task was cancelled.
    func cancel(_ task: URLSessionTask) { stop(task, CancellationError()) }

    private func stop(_ task: URLSessionTask, _ outcome: any Error) {
        let first = lock.withLock { () -> Bool in
            guard let pending = tasks[task.taskIdentifier], pending.outcome == nil, pending.ended == nil else { return false }
            tasks[task.taskIdentifier]?.outcome = outcome
            return true
        }
        if first { task.cancel() }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
        completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let response = response as? HTTPURLResponse else {
            fail(dataTask, "no HTTP answer")
            return completionHandler(.cancel)
        }
        if response.expectedContentLength > Int64(URLSessionTransport.maximumBody) {
            fail(dataTask, "an answer of \(response.expectedContentLength) bytes, over \(URLSessionTransport.maximumBody)")
            return completionHandler(.cancel)
        }
        lock.withLock { tasks[dataTask.taskIdentifier]?.response = response }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let over = lock.withLock { () -> Bool in
            guard var pending = tasks[dataTask.taskIdentifier] else { return false }
            guard pending.body.count + data.count <= URLSessionTransport.maximumBody else { return true }
            pending.body.append(data)
            tasks[dataTask.taskIdentifier] = pending
            return false
        }
        if over { fail(dataTask, "an answer over \(URLSessionTransport.maximumBody) bytes") }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let waiting = lock.withLock { () -> (CheckedContinuation<(Data, HTTPURLResponse), any Error>, Answer)? in
            guard var pending = tasks[task.taskIdentifier] else { return nil }
            let answer: Answer =
                if let outcome = pending.outcome {
                    .failure(outcome)
                } else if let error {
                    .failure(TransportFailure(description: ServiceConnection.describe(error)))
                } else if let response = pending.response {
                    .success((pending.body, response))
                } else {
                    .failure(TransportFailure(description: "no HTTP answer"))
                }
            guard let continuation = pending.continuation else {
                pending.ended = answer
                tasks[task.taskIdentifier] = pending
                return nil
            }
            tasks[task.taskIdentifier] = nil
            return (continuation, answer)
        }
        if let (continuation, answer) = waiting { continuation.resume(with: answer) }
    }
}
