import Foundation

/// This process's open descriptors, read from /proc/self/fd (tests of what a store or server
/// leaves open once it is let go).
package enum OpenFiles {
    /// Descriptors open on `path` or on a file whose name starts with it (a SQLite database's
    /// write-ahead log and shared-memory index).
    package static func descriptors(of path: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry) else { return false }
            return target.hasPrefix(path)
        }.count
    }
}
