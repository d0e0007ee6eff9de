// swift-tools-version:6.0
// attestd: App Attest verification and short-lived access tokens.
// Arrows are one-way (see docs/ARCHITECTURE.md):
//   COpenSSL -> AttestCrypto -> AttestCore -> AttestCLI -> attestctl
//   CSQLite  -> AttestStorage
//   AttestTesting (synthetic device, fixtures) is used by tests, benchmarks and the simulator only.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "attestd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "attestctl", targets: ["attestctl"]),
        .executable(name: "attest-bench", targets: ["attest-bench"]),
        .executable(name: "attest-fuzz", targets: ["attest-fuzz"]),
    ],
    targets: [
        // C libraries from Debian, each imported by exactly one Swift target.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        .target(name: "AttestCrypto", dependencies: ["COpenSSL"], swiftSettings: strict),
        .target(name: "AttestCore", dependencies: ["AttestCrypto"], swiftSettings: strict),
        .target(name: "AttestStorage", dependencies: ["CSQLite"], swiftSettings: strict),
        .target(name: "AttestTesting", dependencies: ["AttestCore", "AttestCrypto"], swiftSettings: strict),
        .target(name: "AttestCLI", dependencies: ["AttestCore", "AttestCrypto"], swiftSettings: strict),

        .executableTarget(name: "attestctl", dependencies: ["AttestCLI"], swiftSettings: strict),
        .executableTarget(
            name: "attest-bench", dependencies: ["AttestCore", "AttestCrypto", "AttestTesting"],
            swiftSettings: strict),

        .executableTarget(name: "attest-fuzz", dependencies: ["AttestCore"], swiftSettings: strict),

        .testTarget(
            name: "AttestCryptoTests", dependencies: ["AttestCrypto", "AttestTesting"], swiftSettings: strict),
        .testTarget(
            name: "AttestCoreTests", dependencies: ["AttestCore", "AttestCrypto", "AttestTesting"],
            swiftSettings: strict),
        .testTarget(
            name: "AttestStorageTests", dependencies: ["AttestStorage"], swiftSettings: strict),
        .testTarget(
            name: "AttestCLITests", dependencies: ["AttestCLI", "AttestTesting"], swiftSettings: strict),
    ]
)
