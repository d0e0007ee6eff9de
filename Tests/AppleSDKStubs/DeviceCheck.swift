// DeviceCheck, as much as AttestClient calls (Apple's documentation, DeviceCheck framework:
// DCAppAttestService, DCError). The async methods are the Swift forms of the completion-handler
// ones that Apple's documentation lists as their async alternatives.
public import Foundation

open class DCAppAttestService: @unchecked Sendable {
    open class var shared: DCAppAttestService { fatalError("stub") }
    open var isSupported: Bool { fatalError("stub") }

    open func generateKey(completionHandler: @escaping @Sendable (String?, (any Error)?) -> Void) { fatalError("stub") }
    open func generateKey() async throws -> String { fatalError("stub") }

    open func attestKey(_ keyId: String, clientDataHash: Data, completionHandler: @escaping @Sendable (Data?, (any Error)?) -> Void) {
        fatalError("stub")
    }
    open func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data { fatalError("stub") }

    open func generateAssertion(
        _ keyId: String, clientDataHash: Data, completionHandler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) { fatalError("stub") }
    open func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data { fatalError("stub") }
}

public struct DCError: Error, Hashable, Sendable {
    public enum Code: Int, Sendable {
        case unknownSystemFailure = 0
        case featureUnsupported = 1
        case invalidInput = 2
        case invalidKey = 3
        case serverUnavailable = 4
    }

    public var code: Code { fatalError("stub") }

    public static var unknownSystemFailure: Code { .unknownSystemFailure }
    public static var featureUnsupported: Code { .featureUnsupported }
    public static var invalidInput: Code { .invalidInput }
    public static var invalidKey: Code { .invalidKey }
    public static var serverUnavailable: Code { .serverUnavailable }
}
