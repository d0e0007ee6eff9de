/// The SQL dialects attestd stores in; each has its own folder under `Migrations/`.
package enum SQLDialect: String, Sendable, CaseIterable {
    case sqlite
    case postgresql
}

/// One file of `Migrations/<dialect>/`, as scripts/embed wrote it into the source.
struct EmbeddedMigrationFile: Sendable {
    let dialect: String
    let id: Int
    let name: String
    let sql: String
}

/// The migrations compiled into the binary, so it runs from any directory with no files beside it.
///
/// `Migrations/<dialect>/NNNN_name.sql` is the only copy of the schema: scripts/embed writes the
/// files into `EmbeddedMigrationFiles.swift` (scripts/run before it builds; scripts/test checks that
/// it is current) and refuses a misnamed file or dialects whose numbered lists differ. Shipped migrations are immutable: change the schema by
/// appending a new one, never by editing.
package enum EmbeddedMigrations {
    /// Every migration this binary knows for `dialect`, in order.
    package static func all(_ dialect: SQLDialect) -> [Migration] {
        switch dialect {
        case .sqlite: sqlite
        case .postgresql: postgresql
        }
    }

    /// `Migrations/sqlite/*.sql`.
    package static let sqlite = migrations(.sqlite)
    /// `Migrations/postgresql/*.sql`.
    package static let postgresql = migrations(.postgresql)

    private static func migrations(_ dialect: SQLDialect) -> [Migration] {
        files.filter { $0.dialect == dialect.rawValue }.map {
            Migration(id: $0.id, name: $0.name, sql: $0.sql)
        }
    }
}
