import AttestOptions
import Testing

/// A small command: a required option, a repeatable one, one with an environment fallback, a switch
/// and a positional argument.
private enum Sample {
    static let name = OptionSpec("name", value: "N", help: "who", required: true)
    static let tag = OptionSpec("tag", value: "T", help: "a tag; repeat for more", repeatable: true)
    static let database = OptionSpec("db", value: "PATH", help: "the database", environment: "SAMPLE_DB")
    static let json = OptionSpec(flag: "json", help: "print JSON")
    static let table = OptionTable([name, tag, database, json], positionals: ["ID"])
    static let other = OptionSpec("other", value: "X", help: "declared by no table")

    static func parse(_ arguments: [String], environment: [String: String] = [:]) throws(UsageError) -> ParsedOptions {
        try table.parse(arguments, environment: environment)
    }

    static func message(_ arguments: [String], environment: [String: String] = [:]) -> String? {
        do {
            _ = try parse(arguments, environment: environment)
            return nil
        } catch {
            return error.message
        }
    }
}

@Suite("The option parser")
struct OptionTableTests {
    @Test("reads --name VALUE, --name=VALUE, repeated options, switches and positionals by their spec")
    func parses() throws {
        let parsed = try Sample.parse(["id1", "--name", "ann", "--tag=a", "--tag", "b", "--json"])
        #expect(parsed.required(Sample.name) == "ann")
        #expect(parsed.values(Sample.tag) == ["a", "b"])
        #expect(parsed.flag(Sample.json))
        #expect(parsed.value(Sample.database) == nil)
        #expect(parsed.positionals == ["id1"])
    }

    @Test("refuses an unknown option")
    func unknownOption() {
        #expect(Sample.message(["id", "--name", "a", "--nmae", "b"]) == "unknown option '--nmae'")
    }

    @Test("refuses an option without its value")
    func missingValue() {
        #expect(Sample.message(["id", "--name"]) == "--name needs a value (N)")
    }

    @Test("refuses a value given to a switch")
    func valuedSwitch() {
        #expect(Sample.message(["id", "--name", "a", "--json=yes"]) == "--json takes no value")
    }

    @Test("refuses a non-repeatable option given twice, and accepts a repeatable one twice")
    func repeated() {
        #expect(Sample.message(["id", "--name", "a", "--name", "b"]) == "--name is given twice")
        #expect(Sample.message(["id", "--name", "a", "--json", "--json"]) == "--json is given twice")
        #expect(Sample.message(["id", "--name", "a", "--tag", "x", "--tag", "x"]) == nil)
    }

    @Test("refuses a missing required option, a missing positional and an extra one")
    func requiredAndPositionals() {
        #expect(Sample.message(["id"]) == "missing --name N")
        #expect(Sample.message(["--name", "a"]) == "missing ID")
        #expect(Sample.message(["id", "id2", "--name", "a"]) == "unexpected argument 'id2'")
    }

    @Test("falls back to the environment variable, and the command line wins over it")
    func environmentFallback() throws {
        let environment = ["SAMPLE_DB": "from-env.sqlite"]
        #expect(try Sample.parse(["id", "--name", "a"], environment: environment).value(Sample.database) == "from-env.sqlite")
        let flagged = try Sample.parse(["id", "--name", "a", "--db", "flag.sqlite"], environment: environment)
        #expect(flagged.value(Sample.database) == "flag.sqlite")
        #expect(try Sample.parse(["id", "--name", "a"]).value(Sample.database) == nil)
    }

    @Test("a variable never counts as a second --db on the command line")
    func environmentIsNotARepeat() throws {
        let parsed = try Sample.parse(["id", "--db", "x", "--name", "a"], environment: ["SAMPLE_DB": "y"])
        #expect(parsed.value(Sample.database) == "x")
    }

    @Test("generates the synopsis and the help columns from the same table")
    func help() {
        #expect(Sample.table.synopsis == "ID --name N [--tag T] [--db PATH] [--json]")
        #expect(Sample.table.optionColumns.count == Sample.table.options.count)
        for (line, option) in zip(Sample.table.optionColumns, Sample.table.options) {
            #expect(line.hasPrefix("  \(option.display) ") && line.hasSuffix(option.help))
        }
        #expect(Sample.table.optionsWithEnvironment.contains("      the database [SAMPLE_DB]"))
        #expect(Sample.table.optionsWithEnvironment.contains("      print JSON [command line only]"))
    }

    @Test("every table's names are unique, so every spec is found by exactly one name")
    func uniqueNames() {
        let names = Sample.table.options.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(!Sample.table.options.contains(Sample.other))
    }

    @Test("recognises a request for help anywhere on the command line")
    func asksForHelp() {
        #expect(CommandLineEntry.asksForHelp(["--db", "x", "--help"]))
        #expect(CommandLineEntry.asksForHelp(["-h"]))
        #expect(!CommandLineEntry.asksForHelp(["--db", "help"]))
    }

    @Test("a positional in brackets may be left out; a required one may not")
    func optionalPositional() throws {
        let table = OptionTable([OptionSpec("db", value: "PATH", help: "d")], positionals: ["NAME", "[EXTRA]"])
        #expect(try table.parse(["a"]).positionals == ["a"])
        #expect(try table.parse(["a", "b"]).positionals == ["a", "b"])
        #expect(throws: UsageError.self) { try table.parse([]) }
        #expect(throws: UsageError.self) { try table.parse(["a", "b", "c"]) }
    }
}
