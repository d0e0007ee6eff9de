/// A closed set of failure kinds, each with a stable spelling.
package protocol ErrorCode: Sendable, Hashable {
    /// The stable, documented spelling (`statement_failed`, `chain_invalid:expired`).
    var identifier: String { get }
}

extension ErrorCode where Self: RawRepresentable, RawValue == String {
    /// The raw value.
    package var identifier: String { rawValue }
}

/// The one shape of every module's error (swift-certificates' and swift-asn1's): a closed code,
/// a sentence for humans, and where it was thrown. Each module names its own, e.g.
/// `typealias StorageError = CodedError<StorageErrorCode>`, with static factories named after its
/// codes in an extension.
///
/// Two errors are equal when their codes are equal, so tests pin the code and not the wording.
/// A reason never quotes input bytes, bound values, passwords or key material: it is safe to log.
package struct CodedError<Kind: ErrorCode>: Error, Sendable, Hashable, CustomStringConvertible {
    /// The module's closed set of codes (`StorageError.Code`).
    package typealias Code = Kind

    /// What failed.
    package let code: Code
    /// A sentence saying what failed and why; not stable, do not match on it.
    package let reason: String
    /// The `#fileID` that threw.
    package let file: String
    /// The line that threw.
    package let line: Int

    /// An error of `code`, recording where it was made.
    package init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        (self.code, self.reason, self.file, self.line) = (code, reason, file, line)
    }

    /// `identifier: reason`.
    package var description: String { "\(code.identifier): \(reason)" }

    /// Equal when the codes are equal; the reason and location are not compared.
    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, to agree with `==`.
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
