// CryptoKit, as much as AttestClient calls (Apple's documentation, CryptoKit: SHA256, SHA256Digest).
public import Foundation

public struct SHA256Digest: Sequence, Hashable, Sendable, CustomStringConvertible {
    public static var byteCount: Int { 32 }
    public func makeIterator() -> Array<UInt8>.Iterator { fatalError("stub") }
    public var description: String { fatalError("stub") }
}

public struct SHA256: Sendable {
    public typealias Digest = SHA256Digest
    public static var byteCount: Int { 32 }
    public init() {}
    public static func hash<D: DataProtocol>(data: D) -> SHA256Digest { fatalError("stub") }
    public mutating func update<D: DataProtocol>(data: D) { fatalError("stub") }
    public func finalize() -> SHA256Digest { fatalError("stub") }
}
