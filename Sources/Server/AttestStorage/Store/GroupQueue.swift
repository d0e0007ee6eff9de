/// Work waiting to be done in groups by one runner at a time, as a database groups commits: the
/// first arrival finds no runner and starts one, which takes everything pending (up to a limit)
/// as one group and comes back for more until nothing is pending. SQLite's group commit
/// (`SQLiteGroupCommit`) keeps it inside its mutex. (PostgreSQL's lookup sender,
/// `PostgresStatementGroups`, used it too until its one lock made eight workers queue; it now
/// keeps requests in shards.)
struct GroupQueue<Element> {
    private var pending: [Element] = []
    /// Whether a runner is working through the queue.
    private(set) var running = false

    /// Items waiting for the next group.
    var count: Int { pending.count }

    /// Queues `element`; true when the caller must run the queue (no runner was running).
    mutating func add(_ element: Element) -> Bool {
        pending.append(element)
        guard !running else { return false }
        running = true
        return true
    }

    /// The next group, up to `limit` items in arrival order, or nil (the runner stops) when none is pending.
    mutating func nextGroup(limit: Int) -> [Element]? {
        guard !pending.isEmpty else {
            running = false
            return nil
        }
        let group = Array(pending.prefix(limit))
        pending.removeFirst(group.count)
        return group
    }
}
