import AttestObservability
import Testing

@Suite("Prometheus text writer")
struct PrometheusTextTests {
    @Test("a family has its HELP and TYPE lines, then its samples")
    func family() {
        var out = PrometheusText()
        out.family("attestd_up", .gauge, help: "Whether attestd answers.")
        out.sample("attestd_up", 1)
        out.sample("attestd_requests_total", ["route": "challenge", "status": "200"], 3)
        #expect(
            out.text == """
                # HELP attestd_up Whether attestd answers.
                # TYPE attestd_up gauge
                attestd_up 1
                attestd_requests_total{route="challenge",status="200"} 3

                """)
    }

    @Test("a label value cannot forge a line: quote, backslash and line feed are escaped, other controls replaced")
    func escapesLabelValues() {
        var out = PrometheusText()
        out.sample("m", ["client_id": "a\"} 1\nattestd_up 0\n\\\u{0}"], 1)
        #expect(out.text == #"m{client_id="a\"} 1\nattestd_up 0\n\\?"} 1"# + "\n")
        #expect(out.text.split(separator: "\n").count == 1)
    }

    @Test("HELP text escapes backslash and line feed")
    func escapesHelp() {
        var out = PrometheusText()
        out.family("m", .counter, help: "one\\two\nthree")
        #expect(out.text.hasPrefix(#"# HELP m one\\two\nthree"# + "\n"))
    }

    @Test("a histogram writes cumulative buckets, +Inf, sum and count with its labels")
    func histogram() {
        var out = PrometheusText()
        out.histogram("h", labels: [("route", "x")], bounds: ["1", "2"], counts: [1, 3], sum: "4.5", count: 4)
        #expect(
            out.text == """
                h_bucket{route="x",le="1"} 1
                h_bucket{route="x",le="2"} 3
                h_bucket{route="x",le="+Inf"} 4
                h_sum{route="x"} 4.5
                h_count{route="x"} 4

                """)
    }

    @Test("floating-point values as Prometheus spells them")
    func doubles() {
        var out = PrometheusText()
        out.sample("a", Double.nan)
        out.sample("b", Double.infinity)
        out.sample("c", 0.25)
        #expect(out.text == "a NaN\nb +Inf\nc 0.25\n")
    }
}
