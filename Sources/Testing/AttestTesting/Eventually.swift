import Glibc

/// Polls `condition` every 5 ms until it holds or `seconds` pass; returns its last value. For what
/// another thread or process makes true with no event to wait for (a server's accept loop, a
/// process's start, a connection's close): only real time lets it run, so this is the tests' one
/// wait by polling.
package func eventually(within seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(5_000)  // real time: another thread's or process's progress
    }
    return condition()
}
