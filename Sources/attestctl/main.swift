import AttestCLI
import Foundation

// Wiring only: the real process's IO and arguments into the tool.
exit(AttestCtl(io: .process).run(Array(CommandLine.arguments.dropFirst())))
