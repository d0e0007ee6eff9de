import AttestCrypto
import AttestService

/// The query of a listing of the admin API (`?limit=&cursor=&...`): its fields decoded and
/// checked, each refused with 400 and the field's name when it is wrong. A cursor is opaque to
/// clients: they send back the `next_cursor` of the page before.
struct AdminListing {
    private let fields: [String: String]

    init(query: String?) throws(Problem) {
        guard let fields = FormBody.parse(Array((query ?? "").utf8)) else {
            throw Problem.malformed(.field(.cursor), "the query string is not a valid list of name=value pairs")
        }
        self.fields = fields
    }

    func text(_ field: ServiceError.RequestField) -> String? {
        fields[field.rawValue].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `limit`: 1 to `maximum`, `standard` when absent.
    func limit(standard: Int, maximum: Int) throws(Problem) -> Int {
        guard let text = text(.limit) else { return standard }
        guard text.utf8.count <= 6, let value = Int(text), (1...maximum).contains(value) else {
            throw Problem.malformed(.field(.limit), "limit must be a whole number from 1 to \(maximum)")
        }
        return value
    }

    // MARK: Devices

    /// The device listing's query: `limit`, `cursor`, `status` (active or blocked), and `key_id`:
    /// a prefix of the key ID in hex (1 to 64 digits, as the list shows it) or the whole key ID in
    /// base64 (as the app has it).
    func deviceQuery() throws(Problem) -> DeviceQuery {
        var query = DeviceQuery(limit: try limit(standard: 100, maximum: DeviceQuery.maximumLimit))
        guard let sort = DeviceQuery.Sort(rawValue: text(.sort) ?? "newest") else {
            throw Problem.malformed(.field(.sort), "sort must be newest or last_seen")
        }
        query.sort = sort
        if let text = text(.cursor) {
            let cursor = try Self.deviceCursor(text)
            guard (cursor.lastSeen != nil) == (sort == .lastSeen) else {
                throw Problem.malformed(.field(.cursor), "this cursor is of a listing in another order: pass the same sort")
            }
            query.after = cursor
        }
        switch text(.status) {
        case nil: break
        case "active": query.status = .active
        case "blocked": query.status = .revoked
        default: throw Problem.malformed(.field(.status), "status must be active or blocked")
        }
        if let text = text(.keyID) {
            let range = try Self.keyIDRange(text)
            query.keyIDRange = DeviceQuery.range(prefix: range.prefix, nibble: range.nibble)
        }
        return query
    }

    /// `key_id` as the bytes it starts with and, for an odd count of hex digits, the last half byte.
    static func keyIDRange(_ text: String) throws(Problem) -> (prefix: [UInt8], nibble: UInt8?) {
        let hexDigits = text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }
        if hexDigits && text.utf8.count <= 64 {
            let even = String(text.prefix(text.count / 2 * 2)).lowercased()
            guard let prefix = even.isEmpty ? [] : Hex.decode(even) else {
                throw Problem.malformed(.field(.keyID), "key_id must be hex digits or a base64 key ID")
            }
            let nibble = text.count % 2 == 1 ? Hex.decode("0" + String(text.suffix(1)).lowercased())?.first : nil
            return (prefix, nibble)
        }
        for alphabet in [Base64Text.Alphabet.standard, .url] {
            if let keyID = Base64Text.decode(text, alphabet), keyID.count == 32 { return (keyID, nil) }
        }
        throw Problem.malformed(.field(.keyID), "key_id must be up to 64 hex digits (a prefix) or a whole key ID in base64")
    }

    /// A device cursor as `deviceCursorText` wrote it: `d.<order or ->.<created_at>.<key ID in hex>`,
    /// or by last activity `s.<updated_at>.<key ID in hex>`.
    static func deviceCursor(_ text: String) throws(Problem) -> DeviceCursor {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 3, parts[0] == "s", text.utf8.count <= 120 {
            guard let lastSeen = Int64(parts[1]), let keyID = Hex.decode(String(parts[2])), keyID.count == 32 else {
                throw Problem.malformed(.field(.cursor), "cursor must be a next_cursor this API returned")
            }
            return DeviceCursor(order: nil, createdAt: 0, keyID: keyID, lastSeen: lastSeen)
        }
        guard parts.count == 4, parts[0] == "d", text.utf8.count <= 120,
            let createdAt = Int64(parts[2]), let keyID = Hex.decode(String(parts[3])), keyID.count == 32
        else { throw Problem.malformed(.field(.cursor), "cursor must be a next_cursor this API returned") }
        let order: Int64?
        if parts[1] == "-" {
            order = nil
        } else if let value = Int64(parts[1]) {
            order = value
        } else {
            throw Problem.malformed(.field(.cursor), "cursor must be a next_cursor this API returned")
        }
        return DeviceCursor(order: order, createdAt: createdAt, keyID: keyID)
    }

    static func deviceCursorText(_ cursor: DeviceCursor) -> String {
        if let lastSeen = cursor.lastSeen { return "s.\(lastSeen).\(Hex.encode(cursor.keyID))" }
        return "d.\(cursor.order.map(String.init) ?? "-").\(cursor.createdAt).\(Hex.encode(cursor.keyID))"
    }

    // MARK: Audit

    /// The audit listing's query: `limit` (up to `maximum`), `cursor`, `action` (a comma-separated
    /// list of actions, or `changes`: every action but sign-ins, or `sign-ins`), `actor` (text it
    /// contains), `target` (text it starts with), `from` and `to` (Unix seconds, inclusive).
    func auditQuery(maximum: Int) throws(Problem) -> AuditQuery {
        var query = AuditQuery(workspaceID: nil, limit: try limit(standard: min(100, maximum), maximum: maximum))
        if let text = text(.cursor) {
            guard text.hasPrefix("a."), text.utf8.count <= 22, let id = Int64(text.dropFirst(2)), id > 0 else {
                throw Problem.malformed(.field(.cursor), "cursor must be a next_cursor this API returned")
            }
            query.before = id
        }
        if let text = text(.action) { query.actions = try Self.actions(text) }
        query.actor = try bounded(.actor)
        query.target = try bounded(.target)
        query.from = try time(.from)
        query.to = try time(.to)
        return query
    }

    static func actions(_ text: String) throws(Problem) -> Set<AuditAction> {
        guard let actions = AuditAction.named(text) else {
            throw Problem.malformed(
                .field(.action), "action must be changes, sign-ins or a comma-separated list of actions such as device.block")
        }
        return actions
    }

    /// A text filter of at most 200 bytes.
    private func bounded(_ field: ServiceError.RequestField) throws(Problem) -> String? {
        guard let text = text(field) else { return nil }
        guard text.utf8.count <= 200 else { throw Problem.malformed(.field(field), "\(field.rawValue) must be at most 200 bytes") }
        return text
    }

    /// A time in Unix seconds.
    private func time(_ field: ServiceError.RequestField) throws(Problem) -> Int64? {
        guard let text = text(field) else { return nil }
        guard text.utf8.count <= 12, let value = Int64(text), value >= 0 else {
            throw Problem.malformed(.field(field), "\(field.rawValue) must be a time in Unix seconds")
        }
        return value
    }

    static func auditCursorText(_ id: Int64) -> String { "a.\(id)" }
}
