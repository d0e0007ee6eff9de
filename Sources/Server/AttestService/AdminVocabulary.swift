package import AttestStorage

// The records the admin use cases answer with, named in the service's vocabulary so that the
// HTTP layer shows them without importing the store (AttestHTTP has no store in reach).

/// A workspace admin key's role (`AttestStorage.AdminRole`).
package typealias AdminRole = AttestStorage.AdminRole
/// A stored admin key, never its secret (`AttestStorage.AdminKeyRecord`).
package typealias AdminKeyRecord = AttestStorage.AdminKeyRecord
/// The workspace's open offer of its ownership (`WorkspaceAdmin+Ownership`).
package typealias OwnershipOffer = AttestStorage.OwnershipOffer
/// An integration (`AttestStorage.IntegrationRecord`).
package typealias IntegrationRecord = AttestStorage.IntegrationRecord
/// An integration's receipt and risk policy (`AttestStorage.IntegrationPolicy`).
package typealias IntegrationPolicy = AttestStorage.IntegrationPolicy
/// An integration's devices and live tokens (`AttestStorage.IntegrationCounts`).
package typealias IntegrationCounts = AttestStorage.IntegrationCounts
/// A device and its live tokens (`AttestStorage.DeviceSummary`).
package typealias DeviceSummary = AttestStorage.DeviceSummary
/// One audit row (`AttestStorage.AuditEntry`).
package typealias AuditEntry = AttestStorage.AuditEntry
/// A listed device, without its receipt (`AttestStorage.DeviceListEntry`).
package typealias DeviceListEntry = AttestStorage.DeviceListEntry
/// Which devices a page lists (`AttestStorage.DeviceQuery`).
package typealias DeviceQuery = AttestStorage.DeviceQuery
/// Where the next page of devices starts (`AttestStorage.DeviceCursor`).
package typealias DeviceCursor = AttestStorage.DeviceCursor
/// One page of devices (`AttestStorage.DevicePage`).
package typealias DevicePage = AttestStorage.DevicePage
/// Which audit rows a page lists (`AttestStorage.AuditQuery`).
package typealias AuditQuery = AttestStorage.AuditQuery
/// One listed audit row and its ID (`AttestStorage.AuditListEntry`).
package typealias AuditListEntry = AttestStorage.AuditListEntry
/// One page of audit rows (`AttestStorage.AuditPage`).
package typealias AuditPage = AttestStorage.AuditPage
/// An audited action (`AttestStorage.AuditAction`).
package typealias AuditAction = AttestStorage.AuditAction
/// A console session's stored row, never its secret (`AttestStorage.AdminSessionRecord`).
package typealias AdminSessionRecord = AttestStorage.AdminSessionRecord
/// A stored access token: its SHA-256, never the token (`AttestStorage.TokenRecord`).
package typealias TokenRecord = AttestStorage.TokenRecord
