internal import CMicroHTTPD

/// An owned `struct MHD_Response`, destroyed on deinit (after MHD has taken its own reference by
/// queueing it, so destroying ours never cuts a response short).
final class MHDResponse {
    private let handle: OpaquePointer

    /// Copies `body` into a new response (.RESPMEM_MUST_COPY: MHD owns the copy); nil if MHD refuses.
    init?(body: [UInt8]) {
        let created = body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let created else { return nil }
        handle = created
    }

    deinit { MHD_destroy_response(handle) }

    /// Adds one header; false when MHD refuses it (CR or LF in it, or one MHD sets itself such as
    /// `Content-Length`).
    func addHeader(_ header: HTTPHeader) -> Bool {
        MHD_add_response_header(handle, header.name, header.value) == .YES
    }

    /// Queues the response with `status` on `connection`; false when MHD refuses (status out of range,
    /// a response already queued, or the connection in the wrong state).
    func queue(status: Int, on connection: OpaquePointer) -> Bool {
        guard (100...999).contains(status) else { return false }
        return MHD_queue_response(connection, UInt32(status), handle) == .YES
    }
}
