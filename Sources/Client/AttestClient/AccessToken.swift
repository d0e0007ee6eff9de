public import Foundation

/// A short-lived access token from attestd, for the API's `Authorization: Bearer` header.
///
/// Its description and mirror never show the token itself, so that printing or dumping one (or a
/// value holding one) leaks nothing into logs.
public struct AccessToken: Sendable, Equatable {
    /// The bearer token, `atk_...`. A secret: send it only to the API, never log it.
    public let value: String
    /// When attestd stops accepting it (the client's clock when the token arrived, plus its
    /// `expires_in`).
    public let expiresAt: Date

    public init(value: String, expiresAt: Date) {
        self.value = value
        self.expiresAt = expiresAt
    }
}

extension AccessToken: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "AccessToken(value: <redacted>, expiresAt: \(expiresAt))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["value": "<redacted>", "expiresAt": expiresAt]) }
}
