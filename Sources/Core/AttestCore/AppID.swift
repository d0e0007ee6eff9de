import AttestCrypto

/// An Apple App ID, `<TeamID>.<bundleID>`: what `rpIdHash` commits to.
package struct AppID: Sendable, Hashable, CustomStringConvertible {
    /// Ten characters of A-Z and 0-9, exactly as Apple issues them.
    package let teamID: String
    /// ASCII letters, digits, `-`, `_` and `.`, in non-empty dot-separated labels. Apple's
    /// documentation allows no `_`, but Apple's own validation-guide sample uses one.
    package let bundleID: String

    /// Validates both parts; never normalises (no trimming, no case folding).
    package init(teamID: String, bundleID: String) throws(AttestError) {
        guard AppID.isValidTeamID(teamID) else {
            throw AttestError(.invalidAppID, "team ID must be exactly 10 characters of A-Z and 0-9")
        }
        guard AppID.isValidBundleID(bundleID) else {
            throw AttestError(
                .invalidAppID,
                "bundle ID must be 1 to 155 ASCII letters, digits, '-', '_' and '.', in non-empty dot-separated labels")
        }
        self.teamID = teamID
        self.bundleID = bundleID
    }

    /// Parses `TEAMID.bundle.id`, splitting at the first dot.
    package init(_ text: String) throws(AttestError) {
        guard let dot = text.firstIndex(of: ".") else {
            throw AttestError(.invalidAppID, "an App ID is TEAMID.BUNDLEID")
        }
        try self.init(teamID: String(text[..<dot]), bundleID: String(text[text.index(after: dot)...]))
    }

    package var description: String { "\(teamID).\(bundleID)" }

    /// SHA-256 of the UTF-8 App ID: the `rpIdHash` a genuine device puts in authenticator data.
    package var rpIDHash: [UInt8] { Digest.sha256(Array(description.utf8)) }

    static func isValidTeamID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 10
            && bytes.allSatisfy {
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            }
    }

    static func isValidBundleID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (1...155).contains(bytes.count) else { return false }
        let allowed = bytes.allSatisfy {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
                || $0 == UInt8(ascii: ".")
        }
        return allowed && !bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).contains { $0.isEmpty }
    }
}

/// The App Attest environment a key was attested in, read from the aaguid.
package enum AppAttestEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    case production
    case development

    /// The 16 raw aaguid bytes Apple uses for this environment.
    package var aaguid: [UInt8] {
        switch self {
        case .production: Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
        case .development: Array("appattestdevelop".utf8)
        }
    }

    /// The environment whose aaguid is exactly `bytes` (compared raw, never as a trimmed string).
    package init?(aaguid bytes: some Collection<UInt8>) {
        let raw = Array(bytes)
        guard let match = AppAttestEnvironment.allCases.first(where: { $0.aaguid == raw }) else { return nil }
        self = match
    }
}
