import AttestCrypto
import AttestStorage
import Synchronization

/// Device public keys as OpenSSL objects, built once per device rather than per assertion
/// (a key ID's public key never changes).
///
/// Bounded by design: at most `capacity` keys (about 2 KB each); past that the oldest entry goes
/// first (first in, first out), so memory stays flat however many devices refresh.
final class PublicKeyCache: Sendable {
    private struct Table {
        var keys: [[UInt8]: PublicKey] = [:]
        /// Insertion order, as a ring: `order[start...]` then `order[..<start]`.
        var order: [[UInt8]] = []
        var start = 0
    }

    private let table = Mutex(Table())
    /// The most keys held.
    let capacity: Int

    /// A cache of at most `capacity` keys (default 10,000: about 20 MB).
    init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
    }

    /// The device's key, built and cached on first use; nil when the stored point is not a P-256 key.
    func key(for device: DeviceRecord) -> PublicKey? {
        if let cached = table.withLock({ $0.keys[device.keyID] }) { return cached }
        guard let key = try? PublicKey(uncompressedPoint: device.publicKey, curve: .p256) else { return nil }
        table.withLock { table in
            guard table.keys[device.keyID] == nil else { return }
            if table.order.count < capacity {
                table.order.append(device.keyID)
            } else {
                table.keys[table.order[table.start]] = nil
                table.order[table.start] = device.keyID
                table.start = (table.start + 1) % capacity
            }
            table.keys[device.keyID] = key
        }
        return key
    }

    /// How many keys are held.
    var count: Int { table.withLock { $0.keys.count } }
}
