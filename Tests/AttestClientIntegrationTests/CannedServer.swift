import AttestTesting
import Foundation
import Glibc
import Synchronization

/// A TCP server on 127.0.0.1 that answers every request with the same bytes (after reading the
/// request's head), as a broken or hostile server in attestd's place would.
final class CannedServer: Sendable {
    let port: UInt16
    private let listener: SilentListener

    init(answer: [UInt8]) throws {
        listener = try SilentListener()
        port = listener.port
        let descriptor = listener.descriptor
        Thread {
            while true {
                let client = accept(descriptor, nil, nil)
                guard client >= 0 else { return }
                Thread {
                    var head: [UInt8] = []
                    var byte: UInt8 = 0
                    while read(client, &byte, 1) == 1 {
                        head.append(byte)
                        if head.suffix(4) == [13, 10, 13, 10] { break }
                    }
                    var sent = 0
                    while sent < answer.count {
                        let count = answer[sent...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                        guard count > 0 else { break }
                        sent += count
                    }
                    close(client)
                }.start()
            }
        }.start()
    }

    /// An HTTP/1.1 200 answer with a JSON `body`.
    static func ok(_ body: [UInt8]) -> [UInt8] {
        Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
    }
}
