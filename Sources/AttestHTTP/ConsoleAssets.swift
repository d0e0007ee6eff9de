import Foundation

/// The console's static files, compiled in from `Console/` by the `EmbedConsole` build plugin.
enum ConsoleAssets {
    /// One file as served: its bytes and media type.
    struct Asset: Sendable {
        let type: String
        let bytes: [UInt8]
    }

    /// The files by name, decoded once.
    static let byName: [String: Asset] = {
        var assets: [String: Asset] = [:]
        for file in files {
            guard let data = Data(base64Encoded: file.base64) else { continue }
            assets[file.name] = Asset(type: file.type, bytes: [UInt8](data))
        }
        return assets
    }()
}
