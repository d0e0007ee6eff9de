import AttestHTTPServer
import Foundation
import Testing

/// The console as compiled into attestd: every file of `Console/` served byte for byte with its
/// media type, and nothing in it that the CSP would block or that loads from another origin.
@Suite("Console assets")
struct ConsoleAssetsTests {
    /// `Console/` in this checkout (located from this file, as the fixtures are).
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Console")

    static func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    @Test("every file of Console/ is served at /console/NAME, byte for byte, with its media type")
    func servedAsIs() throws {
        let world = try AdminWorld()
        let types = [
            "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
            "svg": "image/svg+xml",
        ]
        let names = try Self.files()
        #expect(names.contains("index.html") && names.contains("app.js"))
        for name in names {
            let response = world.call("GET", "/console/\(name)")
            let bytes = [UInt8](try Data(contentsOf: Self.folder.appendingPathComponent(name)))
            #expect(response.status == 200 && response.body == bytes, "\(name)")
            #expect(AdminWorld.header(response, "Content-Type") == types[String(name.split(separator: ".").last ?? "")], "\(name)")
        }
        #expect(world.call("GET", "/console/").body == [UInt8](try Data(contentsOf: Self.folder.appendingPathComponent("index.html"))))
        #expect(world.call("GET", "/console/../Package.swift").status == 404)
    }

    @Test("no inline script or style, no resource from another origin, no HTML built from strings")
    func nothingTheCSPWouldBlock() throws {
        for name in try Self.files() {
            let text = try String(contentsOf: Self.folder.appendingPathComponent(name), encoding: .utf8)
            #expect(!text.contains("style=\""), "\(name): a style attribute (the CSP allows no inline style)")
            #expect(!text.contains("<style"), "\(name): a style element")
            #expect(!text.contains("javascript:") && !text.contains("onclick=") && !text.contains("onload="), "\(name): inline script")
            #expect(
                !text.contains("innerHTML") && !text.contains("outerHTML") && !text.contains("insertAdjacentHTML"),
                "\(name): HTML from strings")
            #expect(!text.contains("eval(") && !text.contains("new Function"), "\(name): eval")
            for origin in ["https://", "http://", "//cdn", "//fonts"] where name != "icon.svg" {
                #expect(!text.contains(origin), "\(name): \(origin) (nothing is loaded from another origin)")
            }
            if name.hasSuffix(".html") {
                // Every script is an external module.
                let scripts = text.components(separatedBy: "<script").dropFirst()
                #expect(scripts.allSatisfy { $0.hasPrefix(" type=\"module\" src=\"") }, "\(name): a script that is not an external module")
            }
        }
    }
}
