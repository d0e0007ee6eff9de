internal import COpenSSL
import Synchronization

/// Why OpenSSL refused a certificate path; a closed set with stable names.
package enum ChainFailure: String, Sendable, Hashable, CaseIterable {
    case expired
    case notYetValid = "not_yet_valid"
    case unableToGetIssuer = "unable_to_get_issuer"
    case signatureInvalid = "signature_invalid"
    case untrustedRoot = "untrusted_root"
    case unhandledCriticalExtension = "unhandled_critical_extension"
    case invalidCA = "invalid_ca"
    case other

    init(openSSLError error: Int32) {
        switch error {
        case X509_V_ERR_CERT_HAS_EXPIRED: self = .expired
        case X509_V_ERR_CERT_NOT_YET_VALID: self = .notYetValid
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
            self = .unableToGetIssuer
        case X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE,
            X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY:
            self = .signatureInvalid
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_CERT_UNTRUSTED:
            self = .untrustedRoot
        case X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION: self = .unhandledCriticalExtension
        case X509_V_ERR_INVALID_CA, X509_V_ERR_KEYUSAGE_NO_CERTSIGN, X509_V_ERR_PATH_LENGTH_EXCEEDED:
            self = .invalidCA
        default: self = .other
        }
    }
}

/// The outcome of one path validation.
package enum ChainVerdict: Sendable, Equatable {
    /// The leaf chains to the pinned root; `viaCachedIntermediate` says whether the fast path served it.
    case trusted(viaCachedIntermediate: Bool)
    /// OpenSSL refused the path; `detail` has its error number, depth and message for logs.
    case rejected(ChainFailure, detail: String)
}

/// An owned `X509_STORE`.
///
/// `@unchecked Sendable`: filled once at init and never changed; OpenSSL locks a store's
/// internal lookups, so concurrent `X509_verify_cert` calls over one store are safe.
final class TrustStore: @unchecked Sendable {
    let handle: OpaquePointer
    /// Kept alive because the store holds a reference to its X509.
    let anchor: Certificate

    init(anchor: Certificate, partialChain: Bool) throws(CryptoError) {
        guard let store = X509_STORE_new() else { throw OpenSSLErrorQueue.error(.internalFailure, "X509_STORE_new") }
        guard X509_STORE_add_cert(store, anchor.x509) == 1 else {
            X509_STORE_free(store)
            throw OpenSSLErrorQueue.error(.internalFailure, "X509_STORE_add_cert")
        }
        // Why no X509_STRICT and no purpose: genuine Apple leaves fail the strict checks (no AKID)
        // and carry Apple's own EKU. PARTIAL_CHAIN is set only on stores whose single anchor is an
        // intermediate that already chained to the pinned root (see ChainVerifier).
        if partialChain { X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN)) }
        handle = store
        self.anchor = anchor
    }

    deinit { X509_STORE_free(handle) }

    /// Number of objects (certificates, CRLs) in the store.
    var objectCount: Int { Int(COpenSSL_sk_X509_OBJECT_num(X509_STORE_get0_objects(handle))) }

    /// The verification flags a fresh context over this store starts with.
    var effectiveFlags: UInt {
        guard let context = X509_STORE_CTX_new() else { return .max }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, handle, nil, nil) == 1 else { return .max }
        return UInt(X509_VERIFY_PARAM_get_flags(X509_STORE_CTX_get0_param(context)))
    }

    /// Validates `leaf` with `untrusted` helpers at `time`; nil on success, else (error, depth, message).
    func validate(leaf: Certificate, untrusted: [Certificate], at time: Int64) -> (Int32, Int32, String)? {
        guard let context = X509_STORE_CTX_new() else { return (-1, -1, "X509_STORE_CTX_new failed") }
        defer { X509_STORE_CTX_free(context) }
        guard let stack = COpenSSL_sk_X509_new_null() else { return (-1, -1, "sk_X509_new_null failed") }
        defer { COpenSSL_sk_X509_free(stack) }
        for certificate in untrusted where COpenSSL_sk_X509_push(stack, certificate.x509) <= 0 {
            return (-1, -1, "sk_X509_push failed")
        }
        guard X509_STORE_CTX_init(context, handle, leaf.x509, stack) == 1 else {
            return (-1, -1, "X509_STORE_CTX_init failed: \(OpenSSLErrorQueue.drain())")
        }
        X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(context), time_t(time))
        let result = withExtendedLifetime(untrusted) { X509_verify_cert(context) }
        if result == 1 { return nil }
        let error = X509_STORE_CTX_get_error(context)
        let depth = X509_STORE_CTX_get_error_depth(context)
        _ = OpenSSLErrorQueue.drain()
        return (error, depth, String(cString: X509_verify_cert_error_string(Int(error))))
    }
}

/// Validates leaf + intermediate paths to exactly one pinned root.
///
/// Fast path: once an intermediate has chained to the pinned root, later paths whose intermediate
/// has the *same DER bytes* are validated against a store holding only that intermediate (as a
/// partial-chain anchor). OpenSSL still checks the leaf's signature, both validity periods at the
/// verification time, and the CA constraints; it saves the P-384 verification of the intermediate.
package final class ChainVerifier: Sendable {
    /// The pinned root.
    package let root: Certificate
    private let rootStore: TrustStore
    private let verifiedIntermediates: Mutex<[(der: [UInt8], store: TrustStore)]>
    private let cacheCapacity = 4

    /// A verifier that trusts `root` and nothing else.
    package init(root: Certificate) throws(CryptoError) {
        self.root = root
        rootStore = try TrustStore(anchor: root, partialChain: false)
        verifiedIntermediates = Mutex([])
    }

    /// Certificates (and other objects) in the pinned store; exactly 1 by construction.
    package var trustedObjectCount: Int { rootStore.objectCount }

    /// The X509_V_FLAG_* bits that full path validation runs with.
    package var verificationFlags: UInt { rootStore.effectiveFlags }

    /// Bit values of the flags that must never be set, for configuration tests.
    package static let forbiddenFlags: [String: UInt] = [
        "X509_V_FLAG_X509_STRICT": UInt(X509_V_FLAG_X509_STRICT),
        "X509_V_FLAG_PARTIAL_CHAIN": UInt(X509_V_FLAG_PARTIAL_CHAIN),
    ]

    /// Validates `leaf` issued by `intermediate` to the pinned root at `time` (Unix seconds).
    package func verify(leaf: Certificate, intermediate: Certificate, at time: Int64) -> ChainVerdict {
        let rootValid = (root.notBefore ?? .max) <= time && time <= (root.notAfter ?? .min)
        if rootValid, let cached = cachedStore(for: intermediate.derBytes) {
            if let (error, depth, message) = cached.validate(leaf: leaf, untrusted: [], at: time) {
                return .rejected(ChainFailure(openSSLError: error), detail: "OpenSSL \(error) at depth \(depth): \(message)")
            }
            return .trusted(viaCachedIntermediate: true)
        }
        if let (error, depth, message) = rootStore.validate(leaf: leaf, untrusted: [intermediate], at: time) {
            return .rejected(ChainFailure(openSSLError: error), detail: "OpenSSL \(error) at depth \(depth): \(message)")
        }
        remember(intermediate)
        return .trusted(viaCachedIntermediate: false)
    }

    /// The already-parsed intermediate with exactly these DER bytes, if it has chained to the
    /// pinned root before; saves parsing it again (d2i_X509 is slow in OpenSSL 3.0).
    package func verifiedIntermediate(matching der: [UInt8]) -> Certificate? {
        cachedStore(for: der)?.anchor
    }

    private func cachedStore(for der: [UInt8]) -> TrustStore? {
        verifiedIntermediates.withLock { entries in entries.first { $0.der == der }?.store }
    }

    private func remember(_ intermediate: Certificate) {
        // Only ever called after `intermediate` chained to the pinned root: never an unverified anchor.
        guard let store = try? TrustStore(anchor: intermediate, partialChain: true) else { return }
        verifiedIntermediates.withLock { entries in
            guard !entries.contains(where: { $0.der == intermediate.derBytes }) else { return }
            if entries.count >= cacheCapacity { entries.removeFirst() }
            entries.append((intermediate.derBytes, store))
        }
    }
}
