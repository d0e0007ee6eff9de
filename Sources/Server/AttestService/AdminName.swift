/// The rule every name an admin gives passes (an integration's, an admin key's, a debug token's),
/// in the admin API, the console and attestctl alike: names reach the audit log, log lines, the
/// console and terminals, so none may hide text or reorder what is around it.
package enum AdminName {
    /// Nil when `name` passes; otherwise what is wrong with it, as the end of a sentence that
    /// starts with the field's name.
    package static func problem(_ name: String, maximumCharacters: Int) -> String? {
        if name.isEmpty { return "must not be empty" }
        if name.count > maximumCharacters { return "must be at most \(maximumCharacters) characters" }
        // A character may be many scalars (combining marks): the bytes are bounded too.
        if name.utf8.count > 4 * maximumCharacters { return "must be at most \(4 * maximumCharacters) bytes of UTF-8" }
        if let refused = name.unicodeScalars.first(where: isRefused) {
            let hex = String(refused.value, radix: 16, uppercase: true)
            return
                "must not contain U+\(String(repeating: "0", count: max(0, 4 - hex.count)) + hex) (a control or bidirectional formatting character)"
        }
        return nil
    }

    /// C0 and C1 controls and DEL; the bidirectional marks, embeddings, overrides and isolates
    /// (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069); the line and paragraph separators.
    static func isRefused(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
