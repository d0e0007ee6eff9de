import Foundation

// Two builds of one target:
// - with -DFUZZING and -sanitize=fuzzer,address (scripts/fuzz): libFuzzer drives FuzzTarget;
// - without (every normal build): runs FuzzTarget once over each file named on the command line,
//   which replays a crash input or a corpus as a regression check.

#if FUZZING
    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
    ) -> Int32

    // A plain function, not a closure in main.swift: libFuzzer calls it from its own thread context.
    func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        FuzzTarget.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
        return 0
    }

    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOne))
#else
    var replayed = 0
    for path in CommandLine.arguments.dropFirst() {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
        let files =
            isDirectory.boolValue
            ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).map { "\(path)/\($0)" } : [path]
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            FuzzTarget.run(Array(data))
            replayed += 1
        }
    }
    print("replayed \(replayed) inputs without a crash")
#endif
