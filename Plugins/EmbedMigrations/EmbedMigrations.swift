import Foundation
import PackagePlugin

/// Compiles `Migrations/<dialect>/NNNN_name.sql` into the target that uses this plugin, so that
/// the files are the only copy of the schema and an installed binary needs no file beside it.
///
/// The generator (`embed-migrations`) checks the names and that every dialect has the same
/// numbered list; a mistake there fails the build rather than a start.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let root = context.package.directoryURL.appending(path: "Migrations")
        let folders = try FileManager.default.contentsOfDirectory(atPath: root.path()).sorted().map { root.appending(path: $0) }
        let files = try FileManager.default.subpathsOfDirectory(atPath: root.path())
            .filter { $0.hasSuffix(".sql") }
            .sorted()
            .map { root.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrationFiles.swift")
        // The folders are inputs too: adding a file changes its folder, which makes the build run
        // the generator again (the generator lists the folders itself, not only the files named here).
        return [
            .buildCommand(
                displayName: "Embedding the migrations of \(root.path())",
                executable: try context.tool(named: "embed-migrations").url,
                arguments: [root.path(), output.path()],
                inputFiles: [root] + folders + files, outputFiles: [output])
        ]
    }
}
