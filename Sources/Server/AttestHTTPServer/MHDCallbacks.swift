internal import CMicroHTTPD
import Synchronization

// libmicrohttpd's callbacks, as plain top-level functions: they run on MHD's worker threads, so they
// must not be closures that could inherit an actor's isolation. Each finds the server's state through
// its `cls` pointer (an unretained `ServerContext`) and the request's through `req_cls`.

/// MHD_OPTION_URI_LOG_CALLBACK: runs once per request, as soon as the request line is read, with the
/// target before percent-decoding. Its return value becomes the request's initial `req_cls`.
func uriLogCallback(
    _ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    guard let cls else { return nil }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    context.activeRequests.add(1, ordering: .sequentiallyConsistent)
    if let connection { context.deadlines.requestStarted(CMicroHTTPD_connection_fd(connection)) }
    let state = RequestState(target: uri.map { String(cString: $0) } ?? "")
    return Unmanaged.passRetained(state).toOpaque()
}

/// MHD_OPTION_NOTIFY_COMPLETED: runs once per request when it ends for any reason (response sent,
/// client gone, timeout, daemon stopped) and releases the request's state.
func requestCompletedCallback(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ termination: MHD_RequestTerminationCode
) {
    guard let cls, let requestContext, let statePointer = requestContext.pointee else { return }
    requestContext.pointee = nil
    Unmanaged<RequestState>.fromOpaque(statePointer).release()
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    context.activeRequests.subtract(1, ordering: .sequentiallyConsistent)
    if let connection { context.deadlines.requestCompleted(CMicroHTTPD_connection_fd(connection)) }
}

/// The `socket_context` (as a bit pattern, never dereferenced) of a connection over its address's
/// cap: its first request gets the over-cap answer. Nothing else sets a connection's socket context.
private let overCapMarker = 1

/// MHD_OPTION_NOTIFY_CONNECTION: a connection opened or closed; tracked for the request deadline and
/// the per-address cap (a connection over it is marked in its `socket_context`).
func connectionNotifyCallback(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection else { return }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    let fd = CMicroHTTPD_connection_fd(connection)
    let address = CMicroHTTPD_connection_client_address(connection).map(SocketAddress.text(of:)) ?? ""
    if code == .CONNECTION_NOTIFY_STARTED {
        context.deadlines.opened(fd)
        if context.addresses.opened(address) { socketContext?.pointee = UnsafeMutableRawPointer(bitPattern: overCapMarker) }
    } else {
        context.deadlines.closed(fd)
        context.addresses.closed(address)
    }
}

/// The accept policy: refuses a connection whose address holds twice its per-address share (below
/// that, one over the share is kept and answered by `accessHandler`).
func acceptPolicyCallback(_ cls: UnsafeMutableRawPointer?, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> MHD_Result {
    guard let cls, let address else { return .YES }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    return context.addresses.admits(SocketAddress.text(of: address)) ? .YES : .NO
}

/// The access handler. MHD calls it once when the headers are complete, once per piece of body
/// (`*upload_data_size > 0`), and once more when the body is complete; the request is answered on
/// that last call, because a response queued earlier makes MHD close the connection.
func accessHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?, _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let method, let uploadDataSize, let statePointer = requestContext?.pointee else {
        // Every request gets its state from the URI log callback first; without it, drop the connection.
        return .NO
    }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(statePointer).takeUnretainedValue()

    if !state.headersProcessed {
        state.headersProcessed = true
        state.headers = connectionHeaders(connection)
        state.remoteAddress = CMicroHTTPD_connection_client_address(connection).map(SocketAddress.text(of:)) ?? ""
        if let mark = CMicroHTTPD_connection_socket_context(connection), Int(bitPattern: mark) == overCapMarker {
            return queue(context.overCapResponse, on: connection, forceClose: true)
        }
        // Refuse an announced oversized body before reading any of it (and before MHD would send
        // `100 Continue`): the body is never buffered, and closing stops the client from sending it.
        if hasAmbiguousFraming(state.headers) {
            return queue(HTTPResponse(status: 400), on: connection, forceClose: true)
        }
        // A transfer coding other than plain `chunked` (`gzip, chunked`, `identity`): libmicrohttpd
        // 0.9.75 would wait for a body it cannot frame until the connection times out. RFC 9112
        // section 6.1: 501 for a coding the server does not understand, and the connection closed.
        if hasUnsupportedTransferCoding(state.headers) {
            return queue(HTTPResponse(status: 501), on: connection, forceClose: true)
        }
        if declaredBodyLengthExceeds(context.maximumBodyBytes, headers: state.headers) {
            return queuePayloadTooLarge(on: connection)
        }
        return .YES
    }

    let pieceCount = uploadDataSize.pointee
    if pieceCount > 0 {
        guard let uploadData else { return .NO }
        uploadDataSize.pointee = 0
        // A chunked body can grow past the limit while it arrives. libmicrohttpd 0.9.75 refuses a
        // response queued while an upload is in progress, so the body is dropped from here on (memory
        // stays bounded) and 413 is answered once it ends; a body that keeps coming after
        // `overflowDrainLimit` more bytes gets the connection closed without an answer.
        if state.discardedBytes > 0 || state.body.count + pieceCount > context.maximumBodyBytes {
            state.body = []
            state.discardedBytes += pieceCount
            return state.discardedBytes <= overflowDrainLimit ? .YES : .NO
        }
        UnsafeRawPointer(uploadData).withMemoryRebound(to: UInt8.self, capacity: pieceCount) { bytes in
            state.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: pieceCount))
        }
        return .YES
    }

    // Resumed: the deferred answer has come.
    if let deferred = state.deferred {
        state.deferred = nil
        let response = deferred.answer()?() ?? HTTPResponse(status: 500)
        return queue(response, on: connection, forceClose: context.isStopping.load(ordering: .sequentiallyConsistent))
    }

    // The watchdog may have cut the request off while its last bytes arrived: then nothing is answered.
    guard context.deadlines.beginAnswer(CMicroHTTPD_connection_fd(connection)) else { return .NO }
    if state.discardedBytes > 0 {
        return queuePayloadTooLarge(on: connection)
    }
    let request = HTTPRequest(
        method: String(cString: method), target: state.target, headers: state.headers, body: state.body,
        remoteAddress: state.remoteAddress)
    state.body = []
    let answer = DeferredResponse(connection: connection, parkedConnections: context.parked)
    context.responder.respond(to: request, answer: answer)
    guard let finish = answer.parkUnlessAnswered() else {
        // Parked: MHD calls again, on this thread, once `complete` has resumed the connection.
        state.deferred = answer
        return .YES
    }
    return queue(finish(), on: connection, forceClose: context.isStopping.load(ordering: .sequentiallyConsistent))
}

/// True for requests that two HTTP parsers could frame two ways (RFC 9112 section 6.3), the
/// basis of request smuggling behind a proxy: more than one Content-Length, a Content-Length that
/// is not a plain number, Content-Length beside Transfer-Encoding, or a header name that is not a
/// token. libmicrohttpd 0.9.75 accepts these (it reads the first Content-Length), so they are
/// refused here with 400 and the connection is closed.
func hasAmbiguousFraming(_ headers: [HTTPHeader]) -> Bool {
    let lengths = headers.filter { $0.name.equalsHeaderName("Content-Length") }
    if lengths.count > 1 { return true }
    if let length = lengths.first {
        if length.value.isEmpty || !length.value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) { return true }
        if headers.contains(where: { $0.name.equalsHeaderName("Transfer-Encoding") }) { return true }
    }
    return headers.contains { header in header.name.isEmpty || !header.name.utf8.allSatisfy(isTokenCharacter) }
}

/// Whether `byte` may appear in a field name (RFC 9110 section 5.6.2's `tchar`), without building
/// an array of the punctuation for each byte as the check once did.
private func isTokenCharacter(_ byte: UInt8) -> Bool {
    switch byte {
    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
        UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
        UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        true
    default: false
    }
}

/// True when a `Transfer-Encoding` field is anything but exactly `chunked` (case-insensitive,
/// surrounding spaces allowed), or appears twice: the only coding attestd reads is chunked alone.
func hasUnsupportedTransferCoding(_ headers: [HTTPHeader]) -> Bool {
    let codings = headers.filter { $0.name.equalsHeaderName("Transfer-Encoding") }
    guard !codings.isEmpty else { return false }
    return codings.count > 1 || !codings[0].value.trimmingASCIISpaces().equalsIgnoringASCIICase("chunked")
}

/// How many bytes of an oversized chunked body are read and dropped, after the limit is crossed, in the
/// hope of answering 413 to a client that merely overshot; past it the connection is closed unanswered.
let overflowDrainLimit = 65_536

/// The request's header fields in the order received (MHD keeps them in arrival order).
private func connectionHeaders(_ connection: OpaquePointer) -> [HTTPHeader] {
    var headers: [HTTPHeader] = []
    withUnsafeMutablePointer(to: &headers) { pointer in
        _ = MHD_get_connection_values_n(connection, .HEADER_KIND, collectHeader, pointer)
    }
    return headers
}

/// MHD_KeyValueIteratorN for `connectionHeaders`: appends one field to the array behind `cls`.
private func collectHeader(
    _ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ keySize: Int,
    _ value: UnsafePointer<CChar>?, _ valueSize: Int
) -> MHD_Result {
    guard let cls, let key else { return .NO }
    let headers = cls.assumingMemoryBound(to: [HTTPHeader].self)
    headers.pointee.append(HTTPHeader(name: decode(key, count: keySize), value: value.map { decode($0, count: valueSize) } ?? ""))
    return .YES
}

/// Bytes as UTF-8, invalid sequences replaced (obs-text values are not worth a second string type).
private func decode(_ pointer: UnsafePointer<CChar>, count: Int) -> String {
    UnsafeRawPointer(pointer).withMemoryRebound(to: UInt8.self, capacity: count) { bytes in
        String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }
}

/// Whether any `Content-Length` field announces more than `limit` bytes (MHD has already answered 400
/// to a non-numeric one; a number too long for 64 bits counts as too large).
private func declaredBodyLengthExceeds(_ limit: Int, headers: [HTTPHeader]) -> Bool {
    headers.contains { header in
        guard header.name.equalsHeaderName("Content-Length") else { return false }
        guard let length = Int(header.value.trimmingASCIISpaces()) else { return true }
        return length > limit
    }
}

/// 413 with `Connection: close`: after an early 413 MHD never reads the body, so the connection cannot be
/// reused; after a dropped chunked body, closing is the cautious default towards a client that overshot.
private func queuePayloadTooLarge(on connection: OpaquePointer) -> MHD_Result {
    queue(HTTPResponse(status: 413), on: connection, forceClose: true)
}

/// Queues `response`; when MHD refuses it (a header or status MHD rejects) queues a bare 500 instead,
/// and when even that fails tells MHD to drop the connection.
private func queue(_ response: HTTPResponse, on connection: OpaquePointer, forceClose: Bool) -> MHD_Result {
    var headers = response.headers
    if forceClose && !headers.contains(where: { $0.name.equalsHeaderName("Connection") && $0.value.equalsHeaderName("close") }) {
        headers.append(HTTPHeader(name: "Connection", value: "close"))
    }
    if let built = MHDResponse(body: response.body), headers.allSatisfy(built.addHeader),
        built.queue(status: response.status, on: connection)
    {
        return .YES
    }
    guard let fallback = MHDResponse(body: []), fallback.addHeader(HTTPHeader(name: "Connection", value: "close")),
        fallback.queue(status: 500, on: connection)
    else { return .NO }
    return .YES
}
