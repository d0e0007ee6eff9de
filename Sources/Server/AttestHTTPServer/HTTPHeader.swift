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
    func equalsHeaderName(_ other: String) -> Bool { self[...].equalsIgnoringASCIICase(other) }

    /// `Substring.trimmingASCIISpaces` of the whole string.
    package func trimmingASCIISpaces() -> Substring { self[...].trimmingASCIISpaces() }
}

extension Substring {
    /// Without the spaces and tabs around it: HTTP's optional whitespace (RFC 9110 section 5.6.3).
    ///
    /// Byte by byte, and on concrete types (a generic version was not specialised across
    /// modules): a search by Character breaks graphemes, which showed in introspect's profile in
    /// its Content-Type check (docs/BENCHMARKS.md). Spaces and tabs are single bytes, so both ends
    /// fall on scalar boundaries.
    package func trimmingASCIISpaces() -> Substring {
        let bytes = utf8
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
            let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })
        else { return self[endIndex...] }
        return self[first..<bytes.index(after: last)]
    }

    /// Whether it equals `other` ASCII case-insensitively (media types, RFC 9110 section 8.3.1),
    /// without a lowercased copy.
    package func equalsIgnoringASCIICase(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        func lower(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
        // Over both strings' own bytes when they have them (native strings do), without an iterator.
        let contiguous = utf8.withContiguousStorageIfAvailable { lhs in
            other.utf8.withContiguousStorageIfAvailable { rhs in
                (0..<lhs.count).allSatisfy { lower(lhs[$0]) == lower(rhs[$0]) }
            }
        }
        if let answer = contiguous ?? nil { return answer }
        return zip(utf8, other.utf8).allSatisfy { lower($0) == lower($1) }
    }
}
