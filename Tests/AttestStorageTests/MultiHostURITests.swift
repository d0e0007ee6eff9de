import AttestStorage
import Testing

/// A primary and its standby in one URI (docs/OPERATIONS.md, "A synchronous standby and failover";
/// scripts/check failover runs it against real servers): libpq reads the host list and
/// `target_session_attrs`, so attestd must hand the URI over unchanged and show it without the password.
@Suite("Multi-host PostgreSQL URIs")
struct MultiHostURITests {
    static let uri = "postgresql://attestd:pw@127.0.0.1:5432,127.0.0.1:5433/attestd?target_session_attrs=read-write"

    @Test("a multi-host URI is a PostgreSQL location whose URI reaches libpq unchanged")
    func parsedUnchanged() throws {
        #expect(try StoreLocation(Self.uri) == .postgresql(PostgresSettings(uri: Self.uri)))
    }

    @Test("a multi-host URI is shown with every host and parameter but without the password")
    func redacted() throws {
        let shown = "postgresql://attestd:***@127.0.0.1:5432,127.0.0.1:5433/attestd?target_session_attrs=read-write"
        #expect(try StoreLocation(Self.uri).redacted == shown)
        #expect(try StoreLocation(Self.uri + "&password=pw").redacted == shown + "&password=***")
    }
}
