import Foundation

/// This process's resources as Linux's /proc shows them, read at scrape time (Prometheus's
/// conventional `process_*` metrics): what an on-call checks first for a leak or saturation.
package struct ProcessStatistics: Sendable, Equatable {
    /// Resident memory, bytes.
    package var residentBytes: Int
    /// Open file descriptors (sockets, the database, the log).
    package var openDescriptors: Int
    /// The descriptor limit (`ulimit -n`, systemd's LimitNOFILE).
    package var maximumDescriptors: Int
    /// Threads.
    package var threads: Int

    /// Now, or nil where /proc cannot be read.
    package static func current() -> ProcessStatistics? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        else { return nil }
        func field(_ name: String) -> Int? {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return nil }
            return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
        }
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return ProcessStatistics(
            residentBytes: (field("VmRSS") ?? 0) * 1024, openDescriptors: descriptors.count,
            maximumDescriptors: Int(clamping: limit.rlim_cur), threads: field("Threads") ?? 0)
    }
}
