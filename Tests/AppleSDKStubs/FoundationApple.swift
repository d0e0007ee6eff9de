// Foundation's Apple-only members that docs/CLIENT.md's blocks call (Apple's documentation,
// Foundation: FileManager.containerURL(forSecurityApplicationGroupIdentifier:)), appended by
// scripts/check apple-client to a block it type-checks on Linux. Never compiled into anything.
#if os(Linux)
    extension FileManager {
        func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? { fatalError("stub") }
    }
#endif
