import AttestHTTP
import AttestHTTPServer
import AttestObservability
import AttestServer
import AttestService
import Foundation
import Testing

@Suite("attestd configuration: flags over ATTESTD_* environment")
struct ServerConfigurationTests {
    @Test("defaults to 127.0.0.1:8080 and ./attestd.sqlite")
    func defaults() throws {
        let configuration = try ServerConfiguration.parse([], environment: [:])
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 8080)
        #expect(configuration.database == .sqlite(path: "attestd.sqlite"))
        #expect(configuration.gatewaySecretFile == nil)
        #expect(configuration.trustAnchorFile == nil)
    }

    @Test(
        "worker threads default to four times the cores on both stores, --threads wins; write waiters (and PostgreSQL connections) as many, at least four"
    )
    func workerThreads() throws {
        let cores = HTTPServer.Configuration.activeCoreCount
        #expect(try ServerConfiguration.parse([], environment: [:]).workerThreads == 4 * cores)
        let postgres = ["--db", "postgresql://attestd@127.0.0.1:5432/attestd"]
        #expect(try ServerConfiguration.parse(postgres, environment: [:]).workerThreads == 4 * cores)
        #expect(try ServerConfiguration.parse(postgres + ["--threads", "3"], environment: [:]).workerThreads == 3)
        #expect(try ServerConfiguration.parse(["--threads", "5"], environment: [:]).workerThreads == 5)
        #expect(try ServerConfiguration.parse(["--threads", "5"], environment: [:]).storeThreads == 5)
        #expect(try ServerConfiguration.parse(postgres + ["--threads", "1"], environment: [:]).storeThreads == 4)
    }

    @Test("reads the environment, and flags win over it")
    func precedence() throws {
        let environment = [
            "ATTESTD_LISTEN": "0.0.0.0:9000", "ATTESTD_DB": "/var/lib/attestd/db.sqlite", "ATTESTD_GATEWAY_SECRET_FILE": "/etc/s",
        ]
        let fromEnvironment = try ServerConfiguration.parse([], environment: environment)
        #expect(fromEnvironment.host == "0.0.0.0")
        #expect(fromEnvironment.port == 9000)
        #expect(fromEnvironment.database == .sqlite(path: "/var/lib/attestd/db.sqlite"))
        #expect(fromEnvironment.gatewaySecretFile == "/etc/s")
        let flagged = try ServerConfiguration.parse(["--listen", "[::1]:0", "--db=x.sqlite"], environment: environment)
        #expect(flagged.host == "::1")
        #expect(flagged.port == 0)
        #expect(flagged.database == .sqlite(path: "x.sqlite"))
    }

    @Test("an option set by its variable may still be given once on the command line, and a variable's value is validated")
    func environmentIsNotARepeat() throws {
        let configuration = try ServerConfiguration.parse(["--threads", "4"], environment: ["ATTESTD_THREADS": "2"])
        #expect(configuration.threads == 4)
        #expect(throws: ServerConfiguration.UsageError(message: "ATTESTD_THREADS takes 1 to 256")) {
            try ServerConfiguration.parse([], environment: ["ATTESTD_THREADS": "0"])
        }
    }

    @Test("sets rate limits with burst twice the rate, 0 meaning unlimited")
    func rates() throws {
        let configuration = try ServerConfiguration.parse(["--attest-rate", "50", "--address-rate", "0"], environment: [:])
        #expect(configuration.attestPerIntegration == RateLimit(perSecond: 50, burst: 100))
        #expect(configuration.perAddress == .unlimited)
    }

    @Test(
        "refuses malformed flags",
        arguments: [
            ["--listen", "localhost"], ["--listen", "1.2.3.4:99999"], ["--bogus", "1"], ["--db"], ["--threads", "0"],
            ["--attest-rate", "-1"],
            ["--db", "a", "--db", "b"], ["positional"],
        ])
    func refuses(_ arguments: [String]) {
        #expect(throws: ServerConfiguration.UsageError.self) { try ServerConfiguration.parse(arguments, environment: [:]) }
    }

    @Test("help lists every flag with its environment variable")
    func help() {
        for name in ["--listen", "ATTESTD_LISTEN", "--db", "ATTESTD_DB", "--gateway-secret-file", "--trust-anchor"] {
            #expect(ServerConfiguration.usage.contains(name))
        }
    }

    @Test("a bad value from the environment is refused in the variable's name, one from the command line in the flag's")
    func namesTheSource() throws {
        do {
            _ = try ServerConfiguration.parse([], environment: ["ATTESTD_THREADS": "0"])
            Issue.record("accepted ATTESTD_THREADS=0")
        } catch {
            #expect(error.message.contains("ATTESTD_THREADS") && !error.message.contains("--threads"))
        }
        do {
            _ = try ServerConfiguration.parse(["--threads", "0"], environment: ["ATTESTD_THREADS": "4"])
            Issue.record("accepted --threads 0")
        } catch {
            #expect(error.message.contains("--threads"))
        }
        do {
            _ = try ServerConfiguration.parse(["--listen", "127.0.0.1:99999"], environment: [:])
            Issue.record("accepted port 99999")
        } catch {
            #expect(error.message.contains("1 to 65535"))
        }
    }

    @Test("the trust anchor is command line only: ATTESTD_TRUST_ANCHOR in the environment changes nothing")
    func trustAnchorCommandLineOnly() throws {
        let fromEnvironment = try ServerConfiguration.parse([], environment: ["ATTESTD_TRUST_ANCHOR": "/tmp/evil.pem"])
        #expect(fromEnvironment.trustAnchorFile == nil)
        #expect(!ServerConfiguration.usage.contains("ATTESTD_TRUST_ANCHOR"))
        #expect(try ServerConfiguration.parse(["--trust-anchor", "/tmp/test.pem"], environment: [:]).trustAnchorFile == "/tmp/test.pem")
    }
}

@Suite("Structured log lines")
struct LogLineTests {
    @Test("writes one JSON object per line (ts, level, msg first), escaping what JSON requires")
    func escaping() throws {
        let sink = MemorySink()
        Logger(sink: sink, fields: ["tool": "t"]).log(
            .info, "hello \"world\"\n", ["n": 3, "ok": true, "x": .double(1.5), "path": "a\\b\u{1}"])
        let line = sink.all
        #expect(!line.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["msg"] as? String == "hello \"world\"\n")
        #expect(object["path"] as? String == "a\\b\u{1}")
        #expect(object["n"] as? Int == 3)
        #expect(object["ok"] as? Bool == true)
        #expect(object["x"] as? Double == 1.5)
        #expect(object["tool"] as? String == "t")
        let ts = try #require(object["ts"] as? String)
        #expect(ts.count == 20 && ts.hasSuffix("Z") && ts.dropFirst(10).first == "T")
        #expect(line.hasPrefix(#"{"ts":""#))
        #expect(line.contains(#","level":"info","msg":"hello"#))
    }
}
