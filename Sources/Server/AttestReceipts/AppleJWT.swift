package import AttestCrypto

/// The token Apple's attestationData endpoint takes in `Authorization`: a JWS (RFC 7515) compact
/// serialization, header `{"alg":"ES256","kid":KEY_ID}`, payload `{"iss":TEAM_ID,"iat":SECONDS}`,
/// signed with the integration's DeviceCheck key (P-256) as raw `r || s`, all base64url without padding.
package enum AppleJWT {
    /// The signed token. Never logged: it authenticates as the integration's team for about an hour.
    package static func sign(keyID: String, teamID: String, issuedAt: Int64, key: PrivateKey) throws(CryptoError) -> String {
        let header = JSONText.object([("alg", "ES256"), ("kid", keyID)])
        let payload = JSONText.object([("iss", teamID), ("iat", issuedAt)])
        let signingInput = encode(Array(header.utf8)) + "." + encode(Array(payload.utf8))
        let signature = try key.signES256(Array(signingInput.utf8))
        return signingInput + "." + encode(signature)
    }

    static func encode(_ bytes: [UInt8]) -> String { Base64Text.encode(bytes, .url) }
}
