// Build tool behind Plugins/EmbedMigrations: writes the migration files into Swift source.
//
// usage: embed-migrations MIGRATIONS_DIR OUTPUT.swift
// Embeds every MIGRATIONS_DIR/<dialect>/NNNN_name.sql; ids run 1, 2, 3 ... in each dialect
// and every dialect has the same ids and names. The bytes are written as array literals, so the
// embedded SQL is the file byte for byte whatever it contains.
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: embed-migrations: \(message)\n".utf8))
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else { fail("usage: embed-migrations MIGRATIONS_DIR OUTPUT.swift") }
let root = URL(fileURLWithPath: arguments[1]).standardizedFileURL.path
let output = arguments[2]

struct File {
    var dialect: String
    var id: Int
    var name: String
    var bytes: [UInt8]
}

let paths: [String]
do {
    paths = try FileManager.default.subpathsOfDirectory(atPath: root).filter { $0.hasSuffix(".sql") }.sorted().map { root + "/" + $0 }
} catch {
    fail("cannot list \(root): \(error)")
}
var files: [File] = []
for path in paths {
    let full = URL(fileURLWithPath: path).standardizedFileURL.path
    guard full.hasPrefix(root + "/") else { fail("\(path) is not under \(root)") }
    let parts = full.dropFirst(root.count + 1).split(separator: "/").map(String.init)
    guard parts.count == 2 else { fail("\(path): migrations live in Migrations/<dialect>/NNNN_name.sql") }
    let stem = parts[1].dropLast(".sql".count)
    let pieces = stem.split(separator: "_", maxSplits: 1).map(String.init)
    guard pieces.count == 2, pieces[0].count == 4, let id = Int(pieces[0]), id > 0,
        pieces[1].allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") })
    else { fail("\(path): the name must be NNNN_snake_case_name.sql") }
    guard let data = FileManager.default.contents(atPath: full) else { fail("cannot read \(path)") }
    files.append(File(dialect: parts[0], id: id, name: pieces[1], bytes: [UInt8](data)))
}

let dialects = Dictionary(grouping: files, by: \.dialect).mapValues { $0.sorted { $0.id < $1.id } }
guard let reference = dialects["sqlite"] else { fail("no Migrations/sqlite/*.sql") }
for (dialect, list) in dialects {
    guard list.map(\.id) == Array(1...list.count) else { fail("Migrations/\(dialect): ids must run 1, 2, 3 ... without gaps") }
    guard list.map(\.name) == reference.map(\.name) else {
        fail("Migrations/\(dialect) and Migrations/sqlite must have the same numbered names")
    }
}

var source = "// Generated at build time by embed-migrations from Migrations/; do not edit.\n\n"
source += "extension EmbeddedMigrations {\n"
source += "    /// Every migration file, by dialect folder, in id order.\n"
source += "    static let files: [EmbeddedMigrationFile] = [\n"
for dialect in dialects.keys.sorted() {
    for file in dialects[dialect] ?? [] {
        let bytes = file.bytes.map(String.init).joined(separator: ",")
        source += "        EmbeddedMigrationFile(dialect: \"\(dialect)\", id: \(file.id), name: \"\(file.name)\", bytes: [\(bytes)]),\n"
    }
}
source += "    ]\n}\n"
do {
    try Data(source.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
} catch {
    fail("cannot write \(output): \(error)")
}
