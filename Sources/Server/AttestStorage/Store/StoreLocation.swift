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
    /// How long attestd itself waits for the answer to one statement before it gives the
    /// connection up (`unavailable`): a server or proxy that stops answering while its kernel
    /// still acknowledges sends no error and no timeout of its own. Longer than
    /// `statementTimeoutMilliseconds`, so that a server that answers reports its own timeout first.
    package var answerTimeoutMilliseconds: Int
    /// How long a caller waits for a free pooled connection before `busy`.
    package var checkoutTimeoutMilliseconds: Int

    /// libpq options attestd sets on every connection unless the URI sets them: TCP keepalives
    /// after 10 s idle, every 5 s, 3 unanswered probes; and data unacknowledged for 10 s closes
    /// the connection (`tcp_user_timeout`). libpq ignores them on a Unix socket.
    package static let keepaliveDefaults = [
        ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"), ("keepalives_count", "3"),
        ("tcp_user_timeout", "10000"),
    ]

    /// Settings for `uri` with the defaults: 4 connections, 3 s connect, 5 s statements (6 s for
    /// their answers), 5 s checkout.
    package init(
        uri: String, poolSize: Int = 4, connectTimeoutSeconds: Int = 3, statementTimeoutMilliseconds: Int = 5000,
        answerTimeoutMilliseconds: Int? = nil, checkoutTimeoutMilliseconds: Int = 5000
    ) {
        (self.uri, self.poolSize, self.connectTimeoutSeconds, self.statementTimeoutMilliseconds, self.checkoutTimeoutMilliseconds) = (
            uri, poolSize, connectTimeoutSeconds, statementTimeoutMilliseconds, checkoutTimeoutMilliseconds
        )
        self.answerTimeoutMilliseconds = answerTimeoutMilliseconds ?? statementTimeoutMilliseconds + 1000
    }

    /// True for a libpq URI (`postgresql://` or `postgres://`, any case).
    package static func isURI(_ value: String) -> Bool {
        let lower = value.lowercased()
        return lower.hasPrefix("postgresql://") || lower.hasPrefix("postgres://")
    }

    /// Whether the URI itself carries a password (in its user-info or a `...password=` parameter),
    /// which then shows wherever the URI does: a command line in `ps`, a unit file.
    package var carriesPassword: Bool { redactedURI != uri }

    /// The URI with every password replaced by `***`: the one in the user-info part
    /// (`user:secret@host`) and the value of every query parameter whose name, percent-decoded,
    /// ends in `password` (`password=`, `sslpassword=`, `pass%77ord=`).
    package var redactedURI: String {
        guard let schemeEnd = uri.firstRange(of: "://") else { return uri }
        let scheme = uri[..<schemeEnd.upperBound]
        var rest = Substring(uri[schemeEnd.upperBound...])
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[mark...]
            rest = rest[..<mark]
        }
        // The user-info ends at the last '@' before the query: a password with a raw '@' or '/'
        // (which libpq would read differently, and `validateURI` refuses) is still hidden whole.
        if let at = rest.lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
            rest = rest[..<colon] + ":***" + rest[at...]
        }
        let redactedQuery =
            query.isEmpty
            ? ""
            : "?"
                + query.dropFirst().split(separator: "&", omittingEmptySubsequences: false).map { pair in
                    let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
                    return Self.percentDecoded(name).lowercased().hasSuffix("password") ? name + "=***" : String(pair)
                }.joined(separator: "&")
        return String(scheme) + rest + redactedQuery
    }

    /// The user-info part (before the last '@' ahead of the query), when the URI has one.
    var userInfo: Substring? {
        guard let schemeEnd = uri.firstRange(of: "://") else { return nil }
        let rest = uri[schemeEnd.upperBound...].prefix { $0 != "?" }
        return rest.lastIndex(of: "@").map { rest[..<$0] }
    }

    /// `text` with its `%XX` escapes decoded (a malformed escape is kept as it is), for comparing names.
    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            if byte == UInt8(ascii: "%"), input.count >= 2,
                let value = UInt8(String(decoding: input.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                input = input.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
