// Build tool behind Plugins/EmbedConsole: writes the console's static files into Swift source.
//
// usage: embed-console CONSOLE_DIR OUTPUT.swift
// Embeds every CONSOLE_DIR/name.ext (ext: html, css, js, svg; name: a-z 0-9 - _), as base64 so
// that the embedded file is the file byte for byte whatever it contains. Anything else in the
// folder (a subfolder, another extension) fails the build: the server would not serve it.
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: embed-console: \(message)\n".utf8))
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else { fail("usage: embed-console CONSOLE_DIR OUTPUT.swift") }
let root = URL(fileURLWithPath: arguments[1]).standardizedFileURL.path
let output = arguments[2]
let types = [
    "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml",
]

let names: [String]
do {
    names = try FileManager.default.contentsOfDirectory(atPath: root).sorted()
} catch {
    fail("cannot list \(root): \(error)")
}
var source = "// Generated at build time by embed-console from Console/; do not edit.\n\n"
source += "extension ConsoleAssets {\n"
source += "    /// Every console file: its name, media type and base64 bytes.\n"
source += "    static let files: [(name: String, type: String, base64: String)] = [\n"
for name in names {
    let parts = name.split(separator: ".")
    guard parts.count == 2, let type = types[String(parts[1])],
        parts[0].allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-" || $0 == "_") })
    else { fail("Console/\(name): the console holds name.html|css|js|svg files only (name: a-z 0-9 - _)") }
    guard let data = FileManager.default.contents(atPath: root + "/" + name) else { fail("cannot read Console/\(name)") }
    source += "        (\"\(name)\", \"\(type)\", \"\(data.base64EncodedString())\"),\n"
}
source += "    ]\n}\n"
do {
    try Data(source.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
} catch {
    fail("cannot write \(output): \(error)")
}
