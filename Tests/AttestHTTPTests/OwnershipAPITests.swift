import AttestService
import AttestStorage
import Foundation
import Testing

/// The workspace's ownership passed on in two steps through the admin API: only the primary owner
/// offers and withdraws, only the key offered accepts, within a day; the roles swap at once.
@Suite("Ownership transfer API")
struct OwnershipAPITests {
    typealias W = AdminWorld

    static func me(_ world: AdminWorld, _ key: String) -> [String: Any] { W.body(world.call("GET", "/admin/v1/me", key: key)) }

    @Test("the primary owner offers, the offered key accepts, and the two keys' roles swap; nobody else can")
    func transfer() async throws {
        try await offThePool {
            let world = try AdminWorld()
            let primary = try world.key(.primaryOwner, name: "Founder")
            let owner = try world.key(.owner)
            let successor = try world.key(.admin, name: "Successor")
            let successorID = try #require(Self.me(world, successor)["key_id"] as? String)
            let ownerOffer = world.call("POST", "/admin/v1/ownership/offer", key: owner, json: #"{"key_id":"\#(successorID)"}"#)
            #expect(ownerOffer.status == 403 && W.code(ownerOffer) == "forbidden_role")
            let made = world.call("POST", "/admin/v1/ownership/offer", key: primary, json: #"{"key_id":"\#(successorID)"}"#)
            #expect(made.status == 201 && W.body(made)["to_key_id"] as? String == successorID)
            #expect(
                (W.body(world.call("GET", "/admin/v1/ownership", key: successor))["offer"] as? [String: Any])?["to_key_id"] as? String
                    == successorID)
            #expect(W.body(world.call("GET", "/admin/v1/ownership", key: owner))["offer"] is NSNull)
            let stolen = world.call("POST", "/admin/v1/ownership/accept", key: owner, json: "{}")
            #expect(stolen.status == 404 && W.code(stolen) == "ownership_offer_not_found")
            #expect(Self.me(world, successor)["role"] as? String == "admin")

            let accepted = world.call("POST", "/admin/v1/ownership/accept", key: successor, json: "{}")
            #expect(accepted.status == 200 && W.body(accepted)["role"] as? String == "primary_owner")
            #expect(Self.me(world, successor)["role"] as? String == "primary_owner")
            #expect(Self.me(world, primary)["role"] as? String == "owner")
            #expect(world.call("POST", "/admin/v1/ownership/accept", key: successor, json: "{}").status == 404)
            // The new primary owner's key is changed by no other key.
            #expect(world.call("POST", "/admin/v1/keys/\(successorID)/revoke", key: primary, json: "{}").status == 403)
            let audit = W.body(world.call("GET", "/admin/v1/audit?action=ownership.offer,ownership.transfer", key: successor))
            #expect((audit["entries"] as? [[String: Any]])?.map { $0["action"] as? String } == ["ownership.transfer", "ownership.offer"])
        }
    }

    @Test("an offer lapses after a day, can be withdrawn, and goes only to a usable key of the workspace")
    func lapseWithdrawAndTargets() async throws {
        try await offThePool {
            let clock = SettableWallClock(Int64(Date().timeIntervalSince1970))
            let world = try AdminWorld(clock: clock)
            let primary = try world.key(.primaryOwner, name: "Founder")
            let taker = try world.key(.owner, name: "Taker")
            let takerID = try #require(Self.me(world, taker)["key_id"] as? String)
            let offer = #"{"key_id":"\#(takerID)"}"#
            #expect(world.call("POST", "/admin/v1/ownership/offer", key: primary, json: offer).status == 201)
            clock.advance(WorkspaceAdmin.ownershipOfferSeconds)
            #expect(world.call("POST", "/admin/v1/ownership/accept", key: taker, json: "{}").status == 404)
            #expect(W.body(world.call("GET", "/admin/v1/ownership", key: taker))["offer"] is NSNull)

            #expect(world.call("POST", "/admin/v1/ownership/offer", key: primary, json: offer).status == 201)
            #expect(W.body(world.call("DELETE", "/admin/v1/ownership/offer", key: primary))["withdrawn"] as? Bool == true)
            #expect(world.call("POST", "/admin/v1/ownership/accept", key: taker, json: "{}").status == 404)

            let primaryID = try #require(Self.me(world, primary)["key_id"] as? String)
            let toSelf = world.call("POST", "/admin/v1/ownership/offer", key: primary, json: #"{"key_id":"\#(primaryID)"}"#)
            #expect(toSelf.status == 400 && W.body(toSelf)["reason"] as? String == "own_key")
            #expect(try world.admin.setKeyDisabled(id: takerID, true, actor: "test") == true)
            let disabled = world.call("POST", "/admin/v1/ownership/offer", key: primary, json: offer)
            #expect(disabled.status == 400 && W.body(disabled)["reason"] as? String == "key_id")
            let outsider = try world.key(.owner, workspace: W.otherWorkspace)
            let outsiderID = try #require(Self.me(world, outsider)["key_id"] as? String)
            #expect(world.call("POST", "/admin/v1/ownership/offer", key: primary, json: #"{"key_id":"\#(outsiderID)"}"#).status == 404)
        }
    }
}
