#if canImport(DeviceCheck)
    public import Foundation
    import DeviceCheck

    /// The device's own App Attest service, `DCAppAttestService.shared` (Apple platforms only):
    /// the four calls and their errors mapped to `AppAttestDeviceError`, nothing else.
    public struct DeviceCheckAppAttestDevice: AppAttestDevice {
        public init() {}

        public var isSupported: Bool { DCAppAttestService.shared.isSupported }

        public func generateKey() async throws -> String {
            do {
                return try await DCAppAttestService.shared.generateKey()
            } catch {
                throw Self.mapped(error)
            }
        }

        public func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data {
            do {
                return try await DCAppAttestService.shared.attestKey(keyID, clientDataHash: clientDataHash)
            } catch {
                throw Self.mapped(error)
            }
        }

        public func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data {
            do {
                return try await DCAppAttestService.shared.generateAssertion(keyID, clientDataHash: clientDataHash)
            } catch {
                throw Self.mapped(error)
            }
        }

        /// The `DCError` codes the client reacts to; any other error as it is.
        static func mapped(_ error: any Error) -> any Error {
            guard let error = error as? DCError else { return error }
            switch error.code {
            case .invalidKey: return AppAttestDeviceError.invalidKey
            case .serverUnavailable: return AppAttestDeviceError.serverUnavailable
            case .featureUnsupported: return AppAttestDeviceError.featureUnsupported
            default: return error
            }
        }
    }
#endif
