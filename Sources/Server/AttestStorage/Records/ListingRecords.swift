package import AttestCore

/// Where the next page of a listing starts: just after the row it names, the last of the page
/// before (keyset paging: a page costs the same at the end of a long list as at its start, and
/// rows added meanwhile neither repeat nor shift the pages).
package struct DeviceCursor: Sendable, Hashable {
    /// The row's order of issue (SQLite's rowid, PostgreSQL's seq; nil for a PostgreSQL row
    /// from before migration 0012).
    package var order: Int64?
    package var createdAt: Int64
    package var keyID: [UInt8]
    /// The row's last activity, when the listing is by last activity (`DeviceQuery.Sort.lastSeen`).
    package var lastSeen: Int64?

    package init(order: Int64?, createdAt: Int64, keyID: [UInt8], lastSeen: Int64? = nil) {
        (self.order, self.createdAt, self.keyID, self.lastSeen) = (order, createdAt, keyID, lastSeen)
    }
}

/// Which of an integration's devices a page lists: newest first, at most `limit`.
package struct DeviceQuery: Sendable, Hashable {
    /// The most rows a page may ask for: a page is one bounded answer, never the whole table.
    package static let maximumLimit = 500

    /// The order of a listing: newest first (by order of issue), or by last activity
    /// (`updated_at`: its last attestation, refresh, receipt or block), most recent first.
    package enum Sort: String, Sendable, Hashable {
        case newest
        case lastSeen = "last_seen"
    }

    package var limit: Int
    package var sort: Sort = .newest
    package var after: DeviceCursor?
    /// Only devices with this status; nil: both.
    package var status: DeviceStatus?
    /// Only key IDs from the first through the second (`prefix(_:nibble:)`).
    package var keyIDRange: [[UInt8]]?

    /// A query of at most `limit` rows (1 to `maximumLimit`), for key IDs that start with
    /// `keyIDPrefix` (and then the high nibble `nibble`: a prefix of an odd number of hex digits).
    package init(
        limit: Int = 100, after: DeviceCursor? = nil, status: DeviceStatus? = nil, keyIDPrefix: [UInt8]? = nil, nibble: UInt8? = nil
    ) {
        self.limit = min(max(1, limit), Self.maximumLimit)
        self.after = after
        self.status = status
        keyIDRange = keyIDPrefix.map { Self.range(prefix: $0, nibble: nibble) }
    }

    /// The first and last 32-byte key IDs that start with `prefix` and `nibble`.
    package static func range(prefix: [UInt8], nibble: UInt8?) -> [[UInt8]] {
        var lower = Array(prefix.prefix(32))
        var upper = lower
        if let nibble, lower.count < 32 {
            lower.append((nibble & 0x0F) << 4)
            upper.append((nibble & 0x0F) << 4 | 0x0F)
        }
        return [lower + [UInt8](repeating: 0, count: 32 - lower.count), upper + [UInt8](repeating: 0xFF, count: 32 - upper.count)]
    }
}

/// One device as a listing shows it: never its receipt nor its public key (a page of them is
/// a bounded answer), with how many unexpired tokens it holds.
package struct DeviceListEntry: Sendable, Equatable, DecodableRecord {
    package var keyID: [UInt8]
    package var status: DeviceStatus
    package var counter: UInt32
    package var environment: AppAttestEnvironment
    package var createdAt: Int64
    /// Its last attestation, refresh, receipt or block.
    package var updatedAt: Int64
    package var receiptState: ReceiptState?
    package var liveTokens: Int
    /// Where the next page starts when this row is the last of one.
    package var cursor: DeviceCursor

    /// The columns before the two computed ones (live tokens, order of issue) a listing adds.
    package static let columns = ["key_id", "status", "counter", "environment", "created_at", "updated_at"] + ReceiptState.columns

    package init(row: inout SQLRowReader) throws(StorageError) {
        keyID = try row.blob()
        status = try row.enumeration(DeviceStatus.self)
        counter = try row.integer(UInt32.self)
        environment = try row.enumeration(AppAttestEnvironment.self)
        createdAt = try row.int64()
        updatedAt = try row.int64()
        receiptState = try ReceiptState.read(&row)
        liveTokens = try row.integer(Int.self)
        cursor = DeviceCursor(order: try row.optionalInt64(), createdAt: createdAt, keyID: keyID)
    }
}

/// One page of devices, and where the next starts (nil: this was the last).
package struct DevicePage: Sendable, Equatable {
    package var devices: [DeviceListEntry]
    package var next: DeviceCursor?

    package init(devices: [DeviceListEntry], next: DeviceCursor?) { (self.devices, self.next) = (devices, next) }
}

/// Which audit rows a page lists: newest first, at most `limit`, matching every filter given.
package struct AuditQuery: Sendable, Hashable {
    /// The most rows a page may ask for (an export asks for up to `maximumExport`).
    package static let maximumLimit = 1_000
    package static let maximumExport = 10_000
    /// How long the audit rows of console sign-ins are kept (90 days) before the purge deletes
    /// them: sign-ins are counted, not kept for ever (every other action's row is).
    package static let signInRetention: Int64 = 90 * 86_400

    /// The workspace whose rows (nil: every row, for the operator).
    package var workspaceID: String?
    package var limit: Int
    /// Only rows older than the row with this ID (the last of the page before).
    package var before: Int64?
    /// Only these actions; empty: all.
    package var actions: Set<AuditAction>
    /// Only rows whose actor contains this text.
    package var actor: String?
    /// Only rows whose target starts with this text.
    package var target: String?
    /// Only rows at or after / at or before these times (Unix seconds).
    package var from: Int64?
    package var to: Int64?

    package init(
        workspaceID: String?, limit: Int = 100, before: Int64? = nil, actions: Set<AuditAction> = [], actor: String? = nil,
        target: String? = nil, from: Int64? = nil, to: Int64? = nil
    ) {
        self.workspaceID = workspaceID
        self.limit = min(max(1, limit), Self.maximumExport)
        (self.before, self.actions, self.actor, self.target, self.from, self.to) = (before, actions, actor, target, from, to)
    }
}

/// One audit row and its ID (the order of writing, and the cursor of the next page).
package struct AuditListEntry: Sendable, Equatable, DecodableRecord {
    package var id: Int64
    package var entry: AuditEntry

    package static let columns = ["id"] + AuditEntry.columns

    package init(row: inout SQLRowReader) throws(StorageError) {
        id = try row.int64()
        entry = try AuditEntry(row: &row)
    }
}

/// One page of audit rows, newest first, and the ID to pass as `before` for the next (nil: the last).
package struct AuditPage: Sendable, Equatable {
    package var entries: [AuditListEntry]
    package var next: Int64?

    package init(entries: [AuditListEntry], next: Int64?) { (self.entries, self.next) = (entries, next) }
}

/// How many verifications of one integration, of one kind, ended with one outcome, in the hour
/// (or the bucket of hours) that starts at `start`.
package struct VerificationCount: Sendable, Hashable {
    /// What was verified: an attestation, an assertion, or a debug token's exchange.
    package enum Kind: String, Sendable, CaseIterable {
        case attestation
        case assertion
        case debug
    }

    package var clientID: String
    /// Unix seconds, a multiple of the bucket (an hour as stored).
    package var start: Int64
    package var kind: Kind
    /// `ok`, or the check or reason that refused it.
    package var outcome: String
    package var count: Int64

    /// How long the hourly rows are kept (the console shows 30 days).
    package static let retention: Int64 = 31 * 86_400

    package init(clientID: String, start: Int64, kind: Kind, outcome: String, count: Int64) {
        (self.clientID, self.start, self.kind, self.outcome, self.count) = (clientID, start, kind, outcome, count)
    }
}

extension VerificationCount: StoredRecord {
    package static let columns = ["client_id", "hour", "kind", "outcome", "count"]

    package var storedValues: [SQLValue] { [.text(clientID), .integer(start), .text(kind.rawValue), .text(outcome), .integer(count)] }

    package init(row: inout SQLRowReader) throws(StorageError) {
        self.init(
            clientID: try row.text(), start: try row.int64(), kind: try row.enumeration(Kind.self), outcome: try row.text(),
            count: try row.int64())
    }
}
