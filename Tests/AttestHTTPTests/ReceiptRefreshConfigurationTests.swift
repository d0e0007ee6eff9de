import AttestHTTP
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
