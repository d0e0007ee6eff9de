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
}

@Suite("/metrics with and without the receipt refresher")
struct ReceiptRefreshMetricsTests {
    @Test("a server with a secrets key reports attestd_receipt_refreshes_total by result; one without has no such series")
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
        let without = try HTTPWorld()
        #expect(!(try without.client().request("GET", "/metrics").text.contains("attestd_receipt_refreshes_total")))
    }
}
