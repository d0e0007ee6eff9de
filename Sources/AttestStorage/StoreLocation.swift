/// Where the token store lives, read from `--db` / `ATTESTD_DB`: a file path means the embedded
/// SQLite database; a libpq URI (`postgresql://` or `postgres://`) means a PostgreSQL server.
package enum StoreLocation: Sendable, Equatable {
    case sqlite(path: String)
    case postgresql(PostgresSettings)

    /// Reads a `--db` value. Throws `misuse` for an empty value.
    package init(_ value: String) throws(StorageError) {
        guard !value.isEmpty else { throw .misuse("the database is empty: give a file path or a postgresql:// URI") }
        if PostgresSettings.isURI(value) {
            self = .postgresql(PostgresSettings(uri: value))
        } else {
            self = .sqlite(path: value)
        }
    }

    /// The storage kind for `/healthz` and logs: `sqlite` or `postgresql`.
    package var kind: SQLDialect {
        switch self {
        case .sqlite: .sqlite
        case .postgresql: .postgresql
        }
    }

    /// The location as it may be logged or printed: the path, or the URI without its password.
    package var redacted: String {
        switch self {
        case .sqlite(let path): path
        case .postgresql(let settings): settings.redactedURI
        }
    }
}

/// How attestd connects to PostgreSQL.
package struct PostgresSettings: Sendable, Equatable {
    /// The libpq connection URI as the operator gave it. May hold a password: never log it; use
    /// `redactedURI`.
    package var uri: String
    /// Connections in the pool (attestd sizes it from `--threads`).
    package var poolSize: Int
    /// libpq's `connect_timeout`: how long a connection attempt may take.
    package var connectTimeoutSeconds: Int
    /// The server-side `statement_timeout` and `lock_timeout` of every session, so no statement hangs.
    package var statementTimeoutMilliseconds: Int
    /// How long a caller waits for a free pooled connection before `busy`.
    package var checkoutTimeoutMilliseconds: Int

    /// Settings for `uri` with the defaults: 4 connections, 3 s connect, 5 s statements, 5 s checkout.
    package init(
        uri: String, poolSize: Int = 4, connectTimeoutSeconds: Int = 3, statementTimeoutMilliseconds: Int = 5000,
        checkoutTimeoutMilliseconds: Int = 5000
    ) {
        (self.uri, self.poolSize, self.connectTimeoutSeconds, self.statementTimeoutMilliseconds, self.checkoutTimeoutMilliseconds) = (
            uri, poolSize, connectTimeoutSeconds, statementTimeoutMilliseconds, checkoutTimeoutMilliseconds
        )
    }

    /// True for a libpq URI (`postgresql://` or `postgres://`, any case).
    package static func isURI(_ value: String) -> Bool {
        let lower = value.lowercased()
        return lower.hasPrefix("postgresql://") || lower.hasPrefix("postgres://")
    }

    /// The URI with any password replaced by `***`: the one in the user-info part
    /// (`user:secret@host`) and any `password=` query parameter.
    package var redactedURI: String {
        guard let schemeEnd = uri.firstRange(of: "://") else { return uri }
        let scheme = uri[..<schemeEnd.upperBound]
        var rest = Substring(uri[schemeEnd.upperBound...])
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[mark...]
            rest = rest[..<mark]
        }
        // The user-info ends at the last '@' before the path.
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        let path = rest[authorityEnd...]
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                authority = userInfo[..<colon] + ":***" + authority[at...]
            }
        }
        let redactedQuery =
            query.isEmpty
            ? ""
            : "?"
                + query.dropFirst().split(separator: "&", omittingEmptySubsequences: false).map { pair in
                    pair.lowercased().hasPrefix("password=") ? "password=***" : String(pair)
                }.joined(separator: "&")
        return String(scheme) + authority + path + redactedQuery
    }
}
