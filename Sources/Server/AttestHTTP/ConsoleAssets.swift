import Foundation

/// The console's static files, compiled in from `Console/` (scripts/embed writes
/// `EmbeddedConsoleFiles.swift`; scripts/test checks that it is current).
enum ConsoleAssets {
    /// One file as served: its bytes and media type.
    struct Asset: Sendable {
        let type: String
        let bytes: [UInt8]
    }

    /// The files by name, decoded once.
    static let byName: [String: Asset] = {
        var assets: [String: Asset] = [:]
        for file in files { assets[file.name] = Asset(type: file.type, bytes: Array(file.text.utf8)) }
        return assets
    }()
}
