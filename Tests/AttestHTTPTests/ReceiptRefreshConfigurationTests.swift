import AttestCrypto
import AttestServer
import Foundation
import Testing

@Suite("attestd's receipt refresher options")
struct ReceiptRefreshConfigurationTests {
    @Test("--secrets-key-file, --apple-receipt-url and --receipt-refresh-interval, with their ATTESTD_* variables")
    func options() throws {
        let defaults = try ServerConfiguration.parse([], environment: [:])
        #expect(defaults.secretsKeyFile == nil)
        #expect(defaults.appleReceiptURL == nil)
        #expect(defaults.receiptRefreshIntervalSeconds == 300)
        let flags = try ServerConfiguration.parse(
            [
                "--secrets-key-file", "/etc/attestd/secrets.key", "--apple-receipt-url", "http://127.0.0.1:9", "--receipt-refresh-interval",
                "0",
            ],
            environment: [:])
        #expect(flags.secretsKeyFile == "/etc/attestd/secrets.key")
        #expect(flags.appleReceiptURL == "http://127.0.0.1:9")
        #expect(flags.receiptRefreshIntervalSeconds == 0)
        let environment = try ServerConfiguration.parse(
            [], environment: ["ATTESTD_SECRETS_KEY_FILE": "/k", "ATTESTD_RECEIPT_REFRESH_INTERVAL": "60"])
        #expect(environment.secretsKeyFile == "/k")
        #expect(environment.receiptRefreshIntervalSeconds == 60)
        #expect(throws: ServerConfiguration.UsageError.self) {
            try ServerConfiguration.parse(["--apple-receipt-url", "ftp://x"], environment: [:])
        }
        #expect(throws: ServerConfiguration.UsageError.self) {
            try ServerConfiguration.parse(["--receipt-refresh-interval", "-1"], environment: [:])
        }
        #expect(ServerConfiguration.usage.contains("--secrets-key-file"))
    }

    @Test("--apple-receipt-url is taken from the command line only: ATTESTD_APPLE_RECEIPT_URL is ignored (decision 0022)")
    func receiptURLNotFromEnvironment() throws {
        let configuration = try ServerConfiguration.parse([], environment: ["ATTESTD_APPLE_RECEIPT_URL": "https://fake.example"])
        #expect(configuration.appleReceiptURL == nil)
        #expect(!ServerConfiguration.usage.contains("ATTESTD_APPLE_RECEIPT_URL"))
    }

    @Test(
        "--apple-receipt-url takes https:// to any host and plain http:// only to a loopback address (decision 0022)",
        arguments: [
            ("https://data.example.com", true), ("https://10.0.0.5:8443/base", true), ("http://127.0.0.1:9", true),
            ("http://127.3.2.1", true), ("http://[::1]:8080/apple", true), ("HTTP://127.0.0.1:9", true),
            ("http://fake-apple.example", false), ("http://10.0.0.5:8080", false), ("http://localhost:9", false),
            ("http://127.0.0.1@fake-apple.example/", false), ("https://user:pw@data.example.com", false),
            ("http://127.0.0.1.fake-apple.example", false), ("http://[::2]:9", false), ("http://127.0.0.1:9x", false),
            ("ftp://127.0.0.1", false), ("https://", false),
        ])
    func receiptURLSchemes(_ url: String, _ accepted: Bool) {
        let parsed = try? ServerConfiguration.parse(["--apple-receipt-url", url], environment: [:])
        #expect((parsed?.appleReceiptURL != nil) == accepted, "\(url)")
    }

    @Test("/healthz and /metrics say whether receipts go to Apple's hosts (decision 0022)")
    func receiptURLReported() throws {
        let apple = try HTTPWorld()
        let client = try apple.client()
        #expect(apple.json(try client.request("GET", "/healthz"))["apple_receipt_url"] as? String == "apple")
        #expect(try client.request("GET", "/metrics").text.contains("attestd_apple_receipt_url_is_apple 1"))
        let replaced = try HTTPWorld { $0.appleReceiptURL = "http://127.0.0.1:9" }
        let other = try replaced.client()
        #expect(replaced.json(try other.request("GET", "/healthz"))["apple_receipt_url"] as? String == "custom (test only)")
        #expect(try other.request("GET", "/metrics").text.contains("attestd_apple_receipt_url_is_apple 0"))
        #expect(replaced.sink.all.contains("APPLE RECEIPT URL REPLACED"))
    }
}

@Suite("/metrics with and without the receipt refresher")
struct ReceiptRefreshMetricsTests {
    @Test("a server with a secrets key reports attestd_receipt_refreshes_total by result; one without reports every result at 0")
    func refresherCountersOnMetrics() throws {
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("attestd-secrets-\(UUID().uuidString).key")
        try (Hex.encode(try SecureRandom.bytes(32)) + "\n").write(to: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: keyFile) }
        let with = try HTTPWorld { configuration in
            configuration.secretsKeyFile = keyFile.path
            // A closed port: the refresher never reaches Apple from a test.
            configuration.appleReceiptURL = "http://127.0.0.1:9"
        }
        let metrics = try with.client().request("GET", "/metrics").text
        #expect(metrics.contains("# TYPE attestd_receipt_refreshes_total counter"))
        #expect(metrics.contains("attestd_receipt_refreshes_total{result=\"refreshed\"} 0"))
        // A rule reads the counter whether or not a refresher runs: the series exist, at 0.
        let without = try HTTPWorld()
        let idle = try without.client().request("GET", "/metrics").text
        #expect(idle.contains("# TYPE attestd_receipt_refreshes_total counter"))
        #expect(idle.contains("attestd_receipt_refreshes_total{result=\"refreshed\"} 0"))
        #expect(!idle.contains(#"attestd_receipt_refreshes_total{result="refreshed"} 1"#))
    }
}
