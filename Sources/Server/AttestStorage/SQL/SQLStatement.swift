/// One statement, written once for both stores: `?` placeholders (numbered in order, or `?N`
/// for the Nth value), rendered for each dialect when the statement is made (statements are
/// `static let`s, so each is rendered once per process). SQLite takes the text as it is; for
/// PostgreSQL each placeholder becomes `$N` and `forPostgreSQL` is appended (row locks:
/// `FOR UPDATE`, which SQLite, holding its one writer lock, neither needs nor parses).
package struct SQLStatement: Sendable, Hashable, CustomStringConvertible {
    /// The text SQLite runs.
    package let sqlite: String
    /// The text PostgreSQL runs.
    package let postgresql: String

    /// A statement of `text`, with `forPostgreSQL` appended in PostgreSQL only.
    package init(_ text: String, forPostgreSQL suffix: String = "") {
        sqlite = text
        postgresql = Self.numbered(text) + suffix
    }

    /// A statement that names `SQLText.issueOrder`, the column numbering a table's rows in their
    /// order of issue, which each dialect spells its own way.
    package init(inIssueOrder text: String, forPostgreSQL suffix: String = "") {
        self.init(
            sqlite: SQLText.issueOrder(in: text, for: .sqlite),
            postgresql: SQLText.issueOrder(in: Self.numbered(text), for: .postgresql) + suffix)
    }

    /// A statement whose two dialects differ by more than placeholders and a lock clause.
    package init(sqlite: String, postgresql: String) { (self.sqlite, self.postgresql) = (sqlite, postgresql) }

    /// The text for `dialect`.
    package func text(for dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqlite
        case .postgresql: postgresql
        }
    }

    package var description: String { sqlite }

    /// `?` → `$1`, `$2` ... in order; `?N` → `$N`. Placeholders inside single-quoted literals are
    /// left alone.
    static func numbered(_ text: String) -> String {
        var out = ""
        var count = 0
        var quoted = false
        var characters = text[...]
        while let character = characters.popFirst() {
            if character == "'" { quoted.toggle() }
            guard character == "?", !quoted else {
                out.append(character)
                continue
            }
            let digits = characters.prefix { $0.isASCII && $0.isNumber }
            if digits.isEmpty {
                count += 1
                out += "$\(count)"
            } else {
                out += "$" + digits
                characters = characters.dropFirst(digits.count)
            }
        }
        return out
    }
}

/// Placeholders and column lists, generated from a record's one declaration of its columns.
package enum SQLText {
    /// `?, ?, ...` for `count` values.
    package static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    /// `INSERT INTO table (columns) VALUES (?, ...)` for `columns`.
    package static func insert(into table: String, _ columns: [String]) -> String {
        "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(placeholders(columns.count)))"
    }

    /// Stands in a statement's text for the column that numbers the rows of tokens, devices,
    /// integrations and admin_keys in their order of issue on one database (migration 0012):
    /// SQLite's rowid, PostgreSQL's `seq` from a sequence (NULL for rows from before 0012). Every
    /// "newest" or "oldest" choice and every listing orders by it (`issueOrder(time:key:)`): the
    /// times are whole seconds, and a tie broken by a random key (a token's hash, a key ID) is a
    /// coin toss.
    package static let issueOrder = "{issue_order}"

    /// An `ORDER BY` list in order of issue, oldest first (`newestFirst`: the reverse): rows from
    /// before migration 0012 (PostgreSQL's NULL `seq`) come before every later row, among
    /// themselves by their whole-second `time` column and then `key`, as they were listed before.
    package static func issueOrder(time: String, key: String, newestFirst: Bool = false) -> String {
        newestFirst ? "\(issueOrder) DESC NULLS LAST, \(time) DESC, \(key) DESC" : "\(issueOrder) NULLS FIRST, \(time), \(key)"
    }

    /// `text` with `issueOrder` spelt for `dialect`.
    package static func issueOrder(in text: String, for dialect: SQLDialect) -> String {
        text.replacing(issueOrder, with: dialect == .sqlite ? "rowid" : "seq")
    }

    /// `columns` as a select list, each prefixed with `alias.` when given.
    package static func list(_ columns: [String], alias: String? = nil) -> String {
        columns.map { column in (alias.map { "\($0)." } ?? "") + column }.joined(separator: ", ")
    }
}
