import AttestCore
import AttestHTTPServer

/// Every parser of untrusted request input in this target behind one call, for `attest-fuzz`, so
/// the parsers themselves stay internal. Decoding only: nothing is stored, answered or logged.
package enum RequestParsers {
    /// Route patterns with each kind of segment: literals, `{name}` and `{name...}`.
    static let patterns = [
        "/v1/attest", "/v1/token", "/v1/introspect", "/admin/v1/integrations/{client_id}/revoke", "/admin/v1/devices/{key_id}/block",
        "/console/{file...}",
    ].map(PathPattern.init)

    /// How much of an input becomes header values and the request target. No branch of their
    /// parsers depends on more (the longest length checked is the bearer credential's 512 bytes),
    /// and their Character-by-Character work over a whole 16 KiB input would dominate each run.
    static let lineLimit = 1024

    /// Runs `bytes` through each parser: as a body, the JSON reader (then every member value through
    /// the field decoders, as a device request's fields go), the admin API's body with its members
    /// and the form reader; as text (invalid UTF-8 replaced), the field decoders; and its first
    /// `lineLimit` bytes, split into lines (up to four), as the request target (the first line), the
    /// `Content-Type` header, and the `Authorization` and `Cookie` headers (one per line, so
    /// duplicates are reachable), then the route patterns.
    package static func exercise(_ bytes: [UInt8]) {
        let lines = bytes.prefix(lineLimit).split(separator: 0x0A, maxSplits: 3, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        let headers = lines.flatMap { [HTTPHeader(name: "Authorization", value: $0), HTTPHeader(name: "Cookie", value: $0)] }
        let request = HTTPRequest(
            method: "POST", target: lines.first ?? "", headers: [HTTPHeader(name: "Content-Type", value: lines.last ?? "")] + headers,
            body: bytes, remoteAddress: "127.0.0.1")
        if let members = try? FlatJSON.parse(bytes) {
            for value in members.values { decodeFields(value) }
        }
        let body = HTTPRequest(
            method: "POST", path: "/v1/attest", headers: [HTTPHeader(name: "Content-Type", value: "application/json")], body: bytes)
        _ = try? RequestDecoding.jsonFields(body, required: [.clientID, .keyID, .attestation, .challenge])
        if let admin = try? AdminBody(body) {
            _ = try? admin.string(.name)
            _ = try? admin.strings(.bundleIDs)
            _ = try? admin.environments()
            _ = try? admin.policy(current: nil)
        }
        _ = FormBody.parse(bytes)
        decodeFields(String(decoding: bytes, as: UTF8.self))
        _ = try? RequestDecoding.requireContentType(request, .json)
        _ = BearerCredential(request)
        _ = ConsoleCookie.session(request)
        for pattern in patterns { _ = pattern.match(request.path) }
    }

    /// The field decoders of the device routes, each given `text`.
    private static func decodeFields(_ text: String) {
        _ = try? RequestDecoding.clientID(text)
        _ = try? RequestDecoding.keyID(text)
        _ = try? RequestDecoding.object(text, .attestation, limit: AttestationObject.maximumSize)
        _ = try? RequestDecoding.challenge(text, seeded: false)
        _ = try? RequestDecoding.challenge(text, seeded: true)
    }
}
