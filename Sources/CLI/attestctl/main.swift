import AttestCLI
import Foundation

// Wiring only: the real process's IO and arguments into the tool.

// Why: backups, copies and restored databases hold device keys and token hashes; whatever umask
// attestctl runs with, the files it creates are its user's only (0600).
umask(0o077)
exit(AttestCtl(io: .process).run(Array(CommandLine.arguments.dropFirst())))
