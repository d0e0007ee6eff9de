import Foundation

/// An IPv4 or IPv6 network in CIDR form (`127.0.0.1/32`, `10.0.0.0/8`, `::1/128`), for
/// `--trusted-proxy`.
package struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    /// The network's address bytes (4 or 16), host bits cleared.
    let address: [UInt8]
    /// Leading bits that must match.
    let prefixLength: Int

    /// Parses `ADDRESS/BITS` (or a bare address: all bits); nil for anything else.
    package init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = Self.bytes(String(parts[0])) else { return nil }
        let bits = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
        guard let bits, (0...(bytes.count * 8)).contains(bits), parts.count == 1 || parts[1].allSatisfy(\.isNumber) else { return nil }
        prefixLength = bits
        address = Self.masked(bytes, bits)
    }

    /// Whether the textual address `text` lies in this network (IPv4 and IPv6 never match each other).
    package func contains(_ text: String) -> Bool {
        guard let bytes = Self.bytes(text), bytes.count == address.count else { return false }
        return Self.masked(bytes, prefixLength) == address
    }

    package var description: String {
        guard let text = Self.text(address) else { return "?" }
        return "\(text)/\(prefixLength)"
    }

    /// The bytes of an IPv4 or IPv6 literal (an IPv4-mapped IPv6 address counts as IPv4).
    static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }

    private static func text(_ bytes: [UInt8]) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) } != nil
        return ok ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }

    private static func masked(_ bytes: [UInt8], _ bits: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let keep = max(0, min(8, bits - index * 8))
            return keep == 8 ? byte : byte & ~(0xFF >> UInt8(keep))
        }
    }
}

/// Which address a request is from: the TCP peer, or, when the peer is a trusted proxy, the
/// address that proxy forwarded (nginx's realip module, recursive): the rightmost
/// `X-Forwarded-For` entry that is not itself a trusted proxy.
struct ClientAddress: Sendable {
    let trustedProxies: [IPNetwork]

    /// Whether the client reached the proxy over TLS: only a trusted proxy's
    /// `X-Forwarded-Proto: https` says so (attestd itself speaks plain HTTP).
    func viaTLS(peer: String, forwardedProto: [String]) -> Bool {
        trustedProxies.contains(where: { $0.contains(peer) }) && forwardedProto.count == 1 && forwardedProto[0].lowercased() == "https"
    }

    func of(peer: String, forwardedFor: [String]) -> String {
        guard trustedProxies.contains(where: { $0.contains(peer) }), !forwardedFor.isEmpty else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            guard IPNetwork.bytes(hop) != nil else { return peer }  // malformed: do not trust any of it
            if !trustedProxies.contains(where: { $0.contains(hop) }) { return hop }
        }
        return hops.first ?? peer
    }
}
