import Foundation
import PackagePlugin

/// Compiles the console's static files (`Console/*.html|css|js|svg`) into the target that uses
/// this plugin, as the migrations are: the folder is the only copy, and an installed binary
/// serves the console with no file beside it. The generator refuses names it would not serve.
@main
struct EmbedConsole: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let root = context.package.directoryURL.appending(path: "Console")
        let files = try FileManager.default.contentsOfDirectory(atPath: root.path()).sorted().map { root.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedConsoleFiles.swift")
        return [
            .buildCommand(
                displayName: "Embedding the console of \(root.path())",
                executable: try context.tool(named: "embed-console").url,
                arguments: [root.path(), output.path()],
                inputFiles: [root] + files, outputFiles: [output])
        ]
    }
}
