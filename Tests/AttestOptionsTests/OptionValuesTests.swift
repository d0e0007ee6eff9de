import AttestOptions
import Testing

@Suite("Typed option values")
struct OptionValuesTests {
    static let count = OptionSpec("count", value: "N", help: "a count")
    static let rate = OptionSpec("rate", value: "PER_SECOND", help: "a rate")
    static let table = OptionTable([count, rate])

    @Test("a whole number within its range is read as that type")
    func integers() throws {
        #expect(try Self.count.integer("42", in: 1...100) == 42)
        #expect(try Self.count.integer("4294967295", in: 0...UInt32.max) == UInt32.max)
        #expect(try Self.count.integer("-3", in: -5...5) == -3)
        let parsed = try Self.table.parse(["--count", "7"])
        #expect(try parsed.integer(Self.count, in: 1...10) == 7)
        #expect(try Self.table.parse([]).integer(Self.count, in: 1...10) == nil)
    }

    @Test(
        "anything else is refused with one wording: the option, its range and unit",
        arguments: ["0", "101", "", " 5", "5 ", "+5", "0x10", "1e2", "5.0", "-1", "99999999999999999999999", "five"])
    func refusesIntegers(_ text: String) {
        #expect(throws: UsageError(message: "--count takes 1 to 100 seconds")) {
            try Self.count.integer(text, in: 1...100, unit: " seconds")
        }
    }

    @Test("a range with no top says 'at least'")
    func openRange() {
        #expect(throws: UsageError(message: "--count takes at least 0")) { try Self.count.integer("-1", in: 0...Int64.max) }
    }

    @Test("a decimal number of at least the minimum; NaN, infinities, spaces and words are refused")
    func decimals() throws {
        #expect(try Self.rate.decimal("0.5", atLeast: 0) == 0.5)
        #expect(try Self.rate.decimal("20", atLeast: 0) == 20)
        for text in ["-1", "nan", "inf", " 1", "one", ""] {
            #expect(throws: UsageError(message: "--rate takes a number of at least 0")) { try Self.rate.decimal(text, atLeast: 0) }
        }
    }
}

@Suite("Option choices")
struct OptionChoiceTests {
    static let mode = OptionSpec("mode", value: "a|b|c", help: "a mode")

    @Test("a choice is named by its spelling; anything else is refused listing every spelling")
    func choices() throws {
        #expect(try Self.mode.choice("b", among: ["a": 1, "b": 2, "c": 3]) == 2)
        #expect(throws: UsageError(message: "--mode takes a, b or c, not 'B'")) {
            try Self.mode.choice("B", among: ["a": 1, "b": 2, "c": 3])
        }
        #expect(throws: UsageError(message: "--mode takes yes or no, not ''")) {
            try Self.mode.choice("", among: ["yes": true, "no": false])
        }
    }
}
