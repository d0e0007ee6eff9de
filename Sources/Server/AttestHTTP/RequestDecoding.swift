import AttestCore
import AttestCrypto
import AttestHTTPServer
import AttestService

/// The media types the API reads.
enum MediaType: String {
    case json = "application/json"
    case form = "application/x-www-form-urlencoded"
}

/// Turns request bodies and fields into the service's typed input. Field names live here, with
/// the wire format: base64 for key IDs and objects, base64url for challenges.
enum RequestDecoding {
    /// The body after the one content-type check: its media type (parameters ignored) must be `type`.
    static func requireContentType(_ request: HTTPRequest, _ type: MediaType) throws(Problem) {
        // Optional whitespace is spaces and tabs (RFC 9110 section 5.6.3). Compared byte by byte,
        // without Foundation or a lowercased copy: introspection runs this on every request, and
        // CharacterSet trimming and grapheme breaking both showed in its profile (docs/BENCHMARKS.md).
        guard let value = request.header("Content-Type"),
            value[..<(value.utf8.firstIndex(of: UInt8(ascii: ";")) ?? value.endIndex)].trimmingASCIISpaces()
                .equalsIgnoringASCIICase(type.rawValue)
        else {
            throw Problem(.unsupportedMediaType, .contentType, "send Content-Type: \(type.rawValue)")
        }
    }

    /// Runs a `FlatJSON` parse, answering its failures as the API does: a key given twice, or a
    /// body that is not `shape`.
    static func parsingJSON<Value>(_ shape: String, _ parse: () throws(FlatJSON.Failure) -> Value) throws(Problem) -> Value {
        do {
            return try parse()
        } catch .duplicateKey {
            throw Problem.malformed(.jsonDuplicateKey, "a JSON key appears twice")
        } catch {
            throw Problem.malformed(.json, "the body must be \(shape)")
        }
    }

    /// The members of a JSON body, after the media type, shape and required-field checks.
    static func jsonFields(
        _ request: HTTPRequest, required: [ServiceError.RequestField]
    ) throws(Problem) -> [ServiceError.RequestField: String] {
        try requireContentType(request, .json)
        let members = try parsingJSON("one JSON object of string values") { () throws(FlatJSON.Failure) in try FlatJSON.parse(request.body)
        }
        var fields: [ServiceError.RequestField: String] = [:]
        for field in required {
            guard let value = members[field.rawValue] else { throw Problem.malformed(.missing(field), "\(field.rawValue) is required") }
            fields[field] = value
        }
        return fields
    }

    /// `client_id`: `clid_` and 32 lower-case hex digits, refused here before anything (limiter,
    /// hints, metrics, the store) sees it.
    static func clientID(_ text: String) throws(ServiceError) -> ClientID {
        guard let clientID = ClientID(text) else {
            throw ServiceError.malformed(.field(.clientID), "client_id must be clid_ and 32 lower-case hex digits")
        }
        return clientID
    }

    /// `key_id`: standard base64 of exactly 32 bytes.
    static func keyID(_ text: String) throws(ServiceError) -> KeyID {
        guard let bytes = Base64Text.decode(text, .standard) else {
            throw ServiceError.malformed(.field(.keyID), "key_id must be standard base64")
        }
        guard let keyID = KeyID(bytes) else { throw ServiceError.malformed(.check(.keyIDLength), "key_id must decode to 32 bytes") }
        return keyID
    }

    /// An attestation or assertion object: standard base64 of at most `limit` bytes, refused by
    /// length before decoding (base64 is 4/3 of the bytes).
    static func object(_ text: String, _ field: ServiceError.RequestField, limit: Int) throws(ServiceError) -> [UInt8] {
        guard text.utf8.count <= (limit + 2) / 3 * 4 else {
            throw ServiceError.malformed(.tooLarge(field), "\(field.rawValue) is larger than \(limit) bytes")
        }
        guard let bytes = Base64Text.decode(text, .standard), !bytes.isEmpty else {
            throw ServiceError.malformed(.field(field), "\(field.rawValue) must be standard base64")
        }
        return bytes
    }

    /// `challenge`: the 43-character base64url string as issued; in test mode also base64url of
    /// 1 to 256 seeded bytes.
    static func challenge(_ text: String, seeded: Bool) throws(ServiceError) -> Challenge {
        if seeded, let bytes = Base64Text.decode(text, .url), let challenge = Challenge(bytes, seeded: true) { return challenge }
        guard text.utf8.count == 43, let bytes = Base64Text.decode(text, .url), let challenge = Challenge(bytes) else {
            throw ServiceError.malformed(.field(.challenge), "challenge must be the 43-character base64url string as issued")
        }
        return challenge
    }
}
