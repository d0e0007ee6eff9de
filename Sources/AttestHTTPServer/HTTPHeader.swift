/// One header field, its name spelled as received or as the responder wrote it.
package struct HTTPHeader: Sendable, Hashable {
    /// The field name; compare it case-insensitively.
    package let name: String
    /// The field value, without surrounding whitespace.
    package let value: String

    /// Makes a header field.
    package init(name: String, value: String) { (self.name, self.value) = (name, value) }
}

extension String {
    /// ASCII case-insensitive equality, as HTTP field names require (no Unicode folding).
    func equalsHeaderName(_ other: String) -> Bool {
        let lhs = utf8
        let rhs = other.utf8
        guard lhs.count == rhs.count else { return false }
        return zip(lhs, rhs).allSatisfy { asciiLowercased($0) == asciiLowercased($1) }
    }
}

private func asciiLowercased(_ byte: UInt8) -> UInt8 {
    (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
}
