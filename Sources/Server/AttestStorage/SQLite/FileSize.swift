internal import Glibc

/// The size of a file on disk, for the database-size gauge.
enum FileSize {
    /// Whether anything exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Bytes in the file at `path`; 0 when it does not exist or cannot be read.
    static func of(_ path: String) -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return Int64(info.st_size)
    }
}
