import AttestObservability
import AttestServer
import Testing

/// A password given in `--db` on the command line shows in `ps` (decision 0023): attestd says so
/// at start and how to keep it out.
@Suite("attestd: a database password on the command line")
struct DatabasePasswordTests {
    static let uri = "postgresql://attestd:argv-password-1234@127.0.0.1:1/attestd"

    @Test("only a --db URI with a password, given on the command line, is flagged; ATTESTD_DB and a password-less URI are not")
    func flagged() throws {
        #expect(try ServerConfiguration.parse(["--db", Self.uri], environment: [:]).databasePasswordOnCommandLine)
        #expect(try ServerConfiguration.parse(["--db=" + Self.uri], environment: [:]).databasePasswordOnCommandLine)
        #expect(try ServerConfiguration.parse([], environment: ["ATTESTD_DB": Self.uri]).databasePasswordOnCommandLine == false)
        let withoutPassword = ["--db", "postgresql://attestd@127.0.0.1:1/attestd?sslmode=require"]
        #expect(try ServerConfiguration.parse(withoutPassword, environment: [:]).databasePasswordOnCommandLine == false)
        let sslPassword = ["--db", "postgresql://attestd@127.0.0.1:1/attestd?sslpassword=key-pw"]
        #expect(try ServerConfiguration.parse(sslPassword, environment: [:]).databasePasswordOnCommandLine)
    }

    @Test("the start-up warning names a password file and PGPASSFILE, and not the password")
    func warning() throws {
        let sink = MemorySink()
        let configuration = try ServerConfiguration.parse(["--db", Self.uri], environment: [:])
        // Nothing answers at 127.0.0.1:1: the application starts anyway, serving 503 and retrying.
        let application = try Application(configuration: configuration, version: "test", logger: Logger(sink: sink))
        application.close()
        #expect(sink.all.contains("holds a password"))
        #expect(sink.all.contains("PGPASSFILE"))
        #expect(!sink.all.contains("argv-password-1234"))
    }
}
