// swift-tools-version:6.0
// attestd: App Attest verification and short-lived access tokens.
// Sources/ is grouped by role (Core, Server, CLI, Client, Tools, Testing, CShims); each target names its
// folder. The target graph, one line per target, is docs/ARCHITECTURE.md's (scripts/check architecture).
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "attestd",
    // The minimums are App Attest's (DCAppAttestService), for the AttestClient library an app links;
    // the server's targets build on Linux only (docs/design/platforms.md, decision 0024).
    platforms: [.iOS(.v14), .macOS(.v11), .macCatalyst(.v14), .tvOS(.v15), .watchOS(.v9), .visionOS(.v1)],
    products: [
        // For apps: the client, and a synthetic device for tests, demos and Linux.
        .library(name: "AttestClient", targets: ["AttestClient"]),
        .library(name: "AttestClientSimulator", targets: ["AttestClientSimulator"]),
        .executable(name: "attestd", targets: ["attestd"]),
        .executable(name: "attestctl", targets: ["attestctl"]),
        .executable(name: "attest-bench", targets: ["attest-bench"]),
        .executable(name: "attest-fuzz", targets: ["attest-fuzz"]),
        .executable(name: "attest-load", targets: ["attest-load"]),
    ],
    targets: [
        // C libraries from Debian, each imported by exactly one Swift target.
        .systemLibrary(name: "COpenSSL", path: "Sources/CShims/COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", path: "Sources/CShims/CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CMicroHTTPD", path: "Sources/CShims/CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CLibPQ", path: "Sources/CShims/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(
            name: "CLibCurl", path: "Sources/CShims/CLibCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // Migrations/<dialect>/*.sql and Console/*.html|css|js|svg are compiled into AttestStorage and AttestHTTP from
        // the sources scripts/embed writes (no build plugin: an app depending on AttestClient builds nothing of them).

        // The one shape of every module's error type (CodedError), below everything.
        .target(name: "AttestErrors", path: "Sources/Core/AttestErrors", swiftSettings: strict),
        .target(
            name: "AttestCrypto", dependencies: ["COpenSSL", "AttestErrors"], path: "Sources/Core/AttestCrypto", swiftSettings: strict),
        .target(
            name: "AttestCore", dependencies: ["AttestCrypto", "AttestErrors"], path: "Sources/Core/AttestCore", swiftSettings: strict),
        // The one monotonic clock and timer seam of the server's threads and timers.
        .target(name: "AttestClock", path: "Sources/Server/AttestClock", swiftSettings: strict),
        .target(
            name: "AttestStorage", dependencies: ["CSQLite", "CLibPQ", "AttestClock", "AttestCore", "AttestErrors"],
            path: "Sources/Server/AttestStorage",
            swiftSettings: strict),
        .target(
            name: "AttestHTTPServer", dependencies: ["CMicroHTTPD", "AttestClock", "AttestErrors"], path: "Sources/Server/AttestHTTPServer",
            swiftSettings: strict),
        // The commit a release build was given (scripts/package), in C: see its source.
        .target(name: "CBuildInfo", path: "Sources/Server/CBuildInfo"),
        .target(name: "AttestOptions", dependencies: ["CBuildInfo"], path: "Sources/Server/AttestOptions", swiftSettings: strict),
        // The one logger and the one Prometheus text writer, for every edge.
        .target(
            name: "AttestObservability", dependencies: ["AttestCrypto"], path: "Sources/Server/AttestObservability", swiftSettings: strict),
        .target(
            name: "AttestAppleClient", dependencies: ["CLibCurl", "AttestCrypto"], path: "Sources/Server/AttestAppleClient",
            swiftSettings: strict),
        .target(
            name: "AttestSimulator", dependencies: ["AttestCore", "AttestCrypto"], path: "Sources/Testing/AttestSimulator",
            swiftSettings: strict),
        // The app's side, a library product: Foundation only, plus CryptoKit, DeviceCheck and Security on
        // Apple platforms; on Linux SHA-256 comes from AttestCrypto, so an app never builds the server's C libraries.
        .target(
            name: "AttestClient", dependencies: [.target(name: "AttestCrypto", condition: .when(platforms: [.linux]))],
            path: "Sources/Client/AttestClient", swiftSettings: strict),
        .target(
            name: "AttestClientSimulator", dependencies: ["AttestClient", "AttestCore", "AttestCrypto", "AttestSimulator"],
            path: "Sources/Client/AttestClientSimulator", swiftSettings: strict),
        // Test support: linked by test targets and the attest-bench developer tool only, never by attestd or attestctl.
        .target(
            name: "AttestTesting",
            dependencies: ["AttestClock", "AttestCore", "AttestCrypto", "AttestStorage", "AttestSimulator"],
            path: "Sources/Testing/AttestTesting", swiftSettings: strict),
        .target(
            name: "AttestService", dependencies: ["AttestCore", "AttestCrypto", "AttestObservability", "AttestStorage"],
            path: "Sources/Server/AttestService", swiftSettings: strict),
        .target(
            name: "AttestReceipts",
            dependencies: ["AttestAppleClient", "AttestCore", "AttestCrypto", "AttestObservability", "AttestService", "AttestStorage"],
            path: "Sources/Server/AttestReceipts", swiftSettings: strict),
        // The HTTP API: router, middleware, routes by audience. No store, receipts or Apple client.
        .target(
            name: "AttestHTTP",
            dependencies: ["AttestService", "AttestHTTPServer", "AttestClock", "AttestCore", "AttestCrypto", "AttestObservability"],
            path: "Sources/Server/AttestHTTP", swiftSettings: strict),
        // The composition root: configuration, and the store, verifier, service, refresher, router and listener wired from it.
        .target(
            name: "AttestServer",
            dependencies: [
                "AttestAppleClient", "AttestClock", "AttestCore", "AttestHTTP", "AttestHTTPServer", "AttestObservability", "AttestOptions",
                "AttestReceipts",
                "AttestService", "AttestStorage",
            ],
            path: "Sources/Server/AttestServer", swiftSettings: strict),
        .target(
            name: "AttestCLI",
            dependencies: [
                "AttestCore", "AttestCrypto", "AttestObservability", "AttestService", "AttestStorage", "AttestSimulator", "AttestOptions",
            ],
            path: "Sources/CLI/AttestCLI", swiftSettings: strict),

        .executableTarget(name: "attestctl", dependencies: ["AttestCLI"], path: "Sources/CLI/attestctl", swiftSettings: strict),
        .executableTarget(
            name: "attestd", dependencies: ["AttestServer", "AttestObservability", "AttestOptions"], path: "Sources/Server/attestd",
            swiftSettings: strict),
        // A developer tool for scripts/bench-*, never installed: it measures the recorded fixtures, so it may use AttestTesting.
        .executableTarget(
            name: "attest-bench",
            dependencies: [
                "AttestCore", "AttestCrypto", "AttestHTTPServer", "AttestService", "AttestStorage", "AttestTesting", "AttestOptions",
            ],
            path: "Sources/Tools/attest-bench", swiftSettings: strict),

        .executableTarget(
            name: "attest-fuzz", dependencies: ["AttestCore", "AttestHTTP"], path: "Sources/Tools/attest-fuzz", swiftSettings: strict),
        // One app process for the client's tests of several processes sharing a key; never installed.
        .executableTarget(
            name: "attest-client-probe", dependencies: ["AttestClient", "AttestClientSimulator"], path: "Sources/Tools/attest-client-probe",
            swiftSettings: strict),
        .executableTarget(
            name: "attest-load", dependencies: ["AttestCore", "AttestCrypto", "AttestSimulator", "AttestOptions"],
            path: "Sources/Tools/attest-load", swiftSettings: strict),

        .testTarget(
            name: "AttestCryptoTests", dependencies: ["AttestCrypto", "AttestTesting"], swiftSettings: strict),
        .testTarget(
            name: "AttestCoreTests", dependencies: ["AttestCore", "AttestCrypto", "AttestTesting"],
            swiftSettings: strict),
        .testTarget(
            name: "AttestHTTPServerTests", dependencies: ["AttestClock", "AttestHTTPServer", "AttestTesting"], swiftSettings: strict),
        // The HTTP server over real sockets, and attestd as a process: the integration stage runs them.
        .testTarget(
            name: "AttestHTTPServerIntegrationTests", dependencies: ["AttestHTTPServer", "AttestTesting"], swiftSettings: strict),
        .testTarget(name: "AttestdIntegrationTests", dependencies: ["AttestStorage", "AttestTesting"], swiftSettings: strict),
        .testTarget(
            name: "AttestHarnessTests", dependencies: ["AttestStorage", "AttestTesting"], exclude: ["README.md"],
            swiftSettings: strict),
        .testTarget(
            name: "AttestHTTPTests",
            dependencies: [
                "AttestClock", "AttestHTTP", "AttestHTTPServer", "AttestObservability", "AttestServer", "AttestService", "AttestStorage",
                "AttestCore",
                "AttestCrypto",
                "AttestTesting",
            ], swiftSettings: strict),
        .testTarget(
            name: "AttestServiceTests", dependencies: ["AttestService", "AttestStorage", "AttestCore", "AttestCrypto", "AttestTesting"],
            swiftSettings: strict),
        .testTarget(
            name: "AttestStorageTests", dependencies: ["AttestClock", "AttestStorage", "AttestTesting"], swiftSettings: strict),
        .testTarget(
            name: "AttestCLITests",
            dependencies: [
                "AttestCLI", "AttestOptions", "AttestServer", "AttestObservability", "AttestService", "AttestStorage", "AttestCrypto",
                "AttestTesting",
            ],
            swiftSettings: strict),
        .testTarget(name: "AttestOptionsTests", dependencies: ["AttestOptions"], swiftSettings: strict),
        .testTarget(
            name: "AttestClientTests",
            dependencies: [
                "AttestClient", "AttestClientSimulator", "AttestHTTP", "AttestHTTPServer", "AttestObservability", "AttestServer",
                "AttestService", "AttestStorage", "AttestTesting",
            ], swiftSettings: strict),
        // The client over URLSession against real sockets (servers that are not attestd): the integration stage runs it.
        .testTarget(
            name: "AttestClientIntegrationTests", dependencies: ["AttestClient", "AttestClientSimulator", "AttestTesting"],
            swiftSettings: strict),
        .testTarget(name: "AttestObservabilityTests", dependencies: ["AttestObservability", "AttestTesting"], swiftSettings: strict),
        .testTarget(
            name: "AttestReceiptsTests",
            dependencies: [
                "AttestReceipts", "AttestAppleClient", "AttestCore", "AttestCrypto", "AttestHTTPServer", "AttestObservability",
                "AttestService",
                "AttestStorage", "AttestTesting",
            ], swiftSettings: strict),
    ]
)
