package import AttestErrors

/// The one error type of AttestStorage: a closed code, a sentence for humans, and where it was thrown.
///
/// Two errors are equal when their codes are equal, so tests pin the code and not the wording.
/// The reason names the failed operation and SQLite's own message (which quotes table and column
/// names, never bound values); it never contains SQL argument values, so it is safe to log.
package typealias StorageError = CodedError<StorageErrorCode>

/// The stable, closed set of failure kinds. `rawValue` is the stable spelling.
package enum StorageErrorCode: String, ErrorCode {
    /// Another connection holds a conflicting lock and the busy timeout ran out (SQLITE_BUSY, SQLITE_LOCKED).
    case busy
    /// The file is not a database or its structure is damaged (SQLITE_CORRUPT, SQLITE_NOTADB, quick_check).
    case corrupt
    /// The database or its directory cannot be written (SQLITE_READONLY).
    case readOnly = "read_only"
    /// The disk or the database's size limit is full (SQLITE_FULL).
    case full
    /// A UNIQUE, PRIMARY KEY, CHECK, NOT NULL, FOREIGN KEY or STRICT type rule refused a write (SQLITE_CONSTRAINT).
    case constraint
    /// The operating system failed a read, write, lock or open (SQLITE_IOERR, SQLITE_CANTOPEN).
    case io
    /// The API was used wrongly: a write outside a transaction, a nested transaction, a bad
    /// parameter index (SQLITE_MISUSE, SQLITE_RANGE).
    case misuse
    /// A statement failed for another reason: bad SQL, a missing table, out of memory.
    case statementFailed = "statement_failed"
    /// The database records a migration this binary does not know: it was written by a newer binary.
    case migrationUnknown = "migration_unknown"
    /// A migration's SQL failed; nothing of it was kept.
    case migrationFailed = "migration_failed"
    /// There is no database where one was expected (attestctl never creates one).
    case missing
    /// The database's schema is older than this binary's: the newer attestd (or `attestctl
    /// migrate`) has to migrate it first.
    case schemaBehind = "schema_behind"
    /// The target of a copy already holds data.
    case notEmpty = "not_empty"
    /// `attestctl store copy` moved this SQLite file's data to another database: using it would
    /// serve what was revoked there since.
    case moved
    /// A concurrent transaction conflicted (PostgreSQL deadlock or serialization failure). The
    /// store retries these; callers see it only when the retries ran out.
    case conflict
    /// The database server cannot be reached, refused the connection, or closed it (PostgreSQL).
    case unavailable
}

extension StorageError {
    /// A `moved` error.
    package static func moved(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.moved, reason, file: file, line: line)
    }
    /// A `busy` error.
    package static func busy(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.busy, reason, file: file, line: line)
    }
    /// A `corrupt` error.
    package static func corrupt(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.corrupt, reason, file: file, line: line)
    }
    /// A `readOnly` error.
    package static func readOnly(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.readOnly, reason, file: file, line: line)
    }
    /// A `full` error.
    package static func full(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.full, reason, file: file, line: line)
    }
    /// A `constraint` error.
    package static func constraint(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.constraint, reason, file: file, line: line)
    }
    /// An `io` error.
    package static func io(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.io, reason, file: file, line: line)
    }
    /// A `misuse` error.
    package static func misuse(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.misuse, reason, file: file, line: line)
    }
    /// A `statementFailed` error.
    package static func statementFailed(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.statementFailed, reason, file: file, line: line)
    }
    /// A `migrationUnknown` error.
    package static func migrationUnknown(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.migrationUnknown, reason, file: file, line: line)
    }
    /// A `missing` error.
    package static func missing(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.missing, reason, file: file, line: line)
    }
    /// A `schemaBehind` error.
    package static func schemaBehind(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.schemaBehind, reason, file: file, line: line)
    }
    /// A `notEmpty` error.
    package static func notEmpty(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.notEmpty, reason, file: file, line: line)
    }
    /// A `conflict` error.
    package static func conflict(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.conflict, reason, file: file, line: line)
    }
    /// An `unavailable` error.
    package static func unavailable(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.unavailable, reason, file: file, line: line)
    }
    /// A `migrationFailed` error.
    package static func migrationFailed(_ reason: String, file: String = #fileID, line: Int = #line) -> StorageError {
        StorageError(.migrationFailed, reason, file: file, line: line)
    }
}
