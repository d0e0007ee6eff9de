import AttestStorage
import AttestTesting
import Foundation
import Testing

/// Attest and refresh answer once their durable write has committed, without holding their HTTP
/// worker while it does (decision 0005), and a challenge's insert holds none either: with one
/// worker, a write waiting for the database leaves the worker free for every other request.
@Suite("HTTP: the durable write holds no worker")
struct WriteOffWorkerTests {
    /// A request's bytes, to send without waiting for its answer.
    static func post(_ target: String, _ json: String) -> String {
        "POST \(target) HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)"
    }

    /// A node with one worker and a 10 s busy timeout, and a second connection to its SQLite file
    /// that can take the write lock (`whileLocked`).
    static func oneWorker() throws -> (world: HTTPWorld, holder: SQLiteDatabase) {
        let world = try HTTPWorld(listening: true) {
            $0.threads = 1
            $0.busyTimeoutMilliseconds = 10_000
        }
        let holder = try SQLiteDatabase(path: world.sqliteFile.path)
        try holder.execute("PRAGMA user_version")  // open the file before taking the lock
        return (world, holder)
    }

    /// `body`'s result, run while `holder` holds SQLite's write lock.
    static func whileLocked<T>(_ holder: SQLiteDatabase, _ body: () throws -> T) throws -> T {
        try holder.immediateTransaction {
            try holder.execute("UPDATE integrations SET name = name WHERE 0")
            return try body()
        }
    }

    @Test("with one worker, an attestation and a refresh waiting for the write lock leave authorize answered; both get 200 once it is free")
    func oneWorkerServesWhileWriting() throws {
        let (world, holder) = try Self.oneWorker()
        let client = try world.socketClient()
        var refreshing = try SyntheticDevice()
        let token = try world.attest(client, device: refreshing)
        let attestBody = try world.attestBody(client, device: try SyntheticDevice())
        let refreshBody = try world.refreshBody(client, device: &refreshing)
        let attesting = try world.socketClient()
        let refresher = try world.socketClient()
        let whileHeld: [Int] = try Self.whileLocked(holder) {
            try attesting.send(Self.post("/v1/attest", attestBody))
            try refresher.send(Self.post("/v1/token", refreshBody))
            // Both writes are verified and waiting for the lock; the one worker answers these.
            return try (0..<3).map { _ in try world.authorize(client, token: token).status }
        }
        #expect(whileHeld == [200, 200, 200])
        let attested = try attesting.receiveResponse()
        #expect(attested.status == 200, "\(attested.text)")
        #expect(world.json(attested)["access_token"] is String)
        let refreshed = try refresher.receiveResponse()
        #expect(refreshed.status == 200, "\(refreshed.text)")
        let fresh = try #require(world.json(refreshed)["access_token"] as? String)
        #expect(try world.authorize(client, token: fresh).status == 200)
    }

    @Test("with one worker, a challenge waiting for the write lock leaves authorize answered; it gets its challenge once the lock is free")
    func challengeHoldsNoWorker() throws {
        let (world, holder) = try Self.oneWorker()
        let client = try world.socketClient()
        let token = try world.attest(client, device: try SyntheticDevice())
        let asking = try world.socketClient()
        let whileHeld: [Int] = try Self.whileLocked(holder) {
            try asking.send(Self.post("/v1/challenge", #"{"client_id":"\#(world.integration.clientID)"}"#))
            return try (0..<3).map { _ in try world.authorize(client, token: token).status }
        }
        #expect(whileHeld == [200, 200, 200])
        let answered = try asking.receiveResponse()
        #expect(answered.status == 200, "\(answered.text)")
        #expect(world.json(answered)["challenge"] is String)
    }

    @Test(
        "with one worker, a revocation waiting for the write lock leaves authorize answered; it gets 200 once free, and then the token is refused"
    )
    func revocationHoldsNoWorker() throws {
        let (world, holder) = try Self.oneWorker()
        let client = try world.socketClient()
        let kept = try world.attest(client, device: try SyntheticDevice())
        let revoked = try world.attest(client, device: try SyntheticDevice())
        let revoker = try world.socketClient()
        let form = "token=\(revoked)"
        let whileHeld: [Int] = try Self.whileLocked(holder) {
            try revoker.send(
                "POST /v1/revoke HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer \(world.gatewaySecret)\r\n"
                    + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(form.utf8.count)\r\n\r\n\(form)")
            return try (0..<3).map { _ in try world.authorize(client, token: kept).status }
        }
        #expect(whileHeld == [200, 200, 200])
        #expect(try revoker.receiveResponse().status == 200)
        #expect(try world.authorize(client, token: revoked).status == 401)
        #expect(try world.authorize(client, token: kept).status == 200)
    }
}
