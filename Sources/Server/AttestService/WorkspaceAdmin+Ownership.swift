import AttestStorage

/// A workspace's primary ownership passed on in two steps, as the big consoles do it: the primary
/// owner offers it to another usable key of the workspace; that key's holder accepts it within a
/// day, and the two keys' roles swap (the giver becomes an owner). Nobody else can take it: the
/// primary owner's key is revoked, disabled or demoted by no other key (the operator's attestctl
/// remains the way out when the primary owner is gone).
extension WorkspaceAdmin {
    /// How long an offer can be accepted.
    package static let ownershipOfferSeconds: Int64 = 86_400

    /// Offers the workspace's ownership to key `id` (the primary owner only), replacing an open offer.
    package func offerOwnership(_ principal: AdminPrincipal, to id: String) throws(ServiceError) -> OwnershipOffer {
        guard principal.role == .primaryOwner else {
            throw ServiceError.forbiddenRole(principal.role, needs: .primaryOwner, to: "offer the workspace's ownership")
        }
        guard let key = try stored({ () throws(StorageError) in try store.adminKey(id: id) }), key.workspaceID == principal.workspaceID
        else { throw ServiceError.adminKeyNotFound }
        guard key.id != principal.keyID else {
            throw ServiceError.malformed(.ownKey, "the primary owner's key holds the ownership already")
        }
        let now = clock.now()
        guard key.status(at: now) == .active else {
            throw ServiceError.malformed(.field(.keyID), "this key is \(key.status(at: now).rawValue): ownership goes to a usable key")
        }
        let offer = OwnershipOffer(
            workspaceID: principal.workspaceID, fromKeyID: principal.keyID, toKeyID: key.id, createdAt: now,
            expiresAt: now + Self.ownershipOfferSeconds)
        let audit = AuditNote<Void>(
            at: now, actor: principal.actor, action: .ownershipOffer, target: key.id, workspaceID: principal.workspaceID
        ) { _ in "to \(key.name), acceptable until \(offer.expiresAt)" }
        try stored { () throws(StorageError) in try store.offerOwnership(offer, audit: audit) }
        logger?.log(
            .warning, "workspace ownership offered", ["workspace.id": .string(principal.workspaceID), "admin_key.id": .string(key.id)])
        return offer
    }

    /// The workspace's open offer when the principal gave it or may accept it; nil otherwise.
    package func ownershipOffer(_ principal: AdminPrincipal) throws(ServiceError) -> OwnershipOffer? {
        let offer = try stored { () throws(StorageError) in try store.ownershipOffer(workspaceID: principal.workspaceID) }
        guard let offer, offer.expiresAt > clock.now(), offer.fromKeyID == principal.keyID || offer.toKeyID == principal.keyID else {
            return nil
        }
        return offer
    }

    /// Withdraws the open offer (the primary owner only); false when there was none.
    package func withdrawOwnershipOffer(_ principal: AdminPrincipal) throws(ServiceError) -> Bool {
        guard principal.role == .primaryOwner else {
            throw ServiceError.forbiddenRole(principal.role, needs: .primaryOwner, to: "withdraw the offer of the workspace's ownership")
        }
        let audit = AuditNote<Bool>(
            at: clock.now(), actor: principal.actor, action: .ownershipWithdraw, target: principal.keyID,
            workspaceID: principal.workspaceID
        ) { withdrawn in withdrawn ? "the open offer withdrawn" : nil }
        return try stored { () throws(StorageError) in try store.withdrawOwnershipOffer(workspaceID: principal.workspaceID, audit: audit) }
    }

    /// Accepts the workspace's open offer to the principal's key: the principal becomes the primary
    /// owner and the giver an owner, at once. `ownership_offer_not_found` when no offer to this key
    /// is open (none, expired, another key's, or its giver no longer the live primary owner).
    package func acceptOwnership(_ principal: AdminPrincipal) throws(ServiceError) -> OwnershipOffer {
        guard let offer = try ownershipOffer(principal), offer.toKeyID == principal.keyID else { throw Self.noOwnershipOffer }
        let now = clock.now()
        let audit = AuditNote<Void>(
            at: now, actor: principal.actor, action: .ownershipTransfer, target: principal.keyID, workspaceID: principal.workspaceID
        ) { _ in "primary owner from \(offer.fromKeyID); it is an owner now" }
        guard
            try stored({ () throws(StorageError) in
                try store.acceptOwnership(workspaceID: principal.workspaceID, keyID: principal.keyID, at: now, audit: audit)
            })
        else { throw Self.noOwnershipOffer }
        logger?.log(
            .warning, "workspace ownership transferred",
            ["workspace.id": .string(principal.workspaceID), "admin_key.id": .string(principal.keyID)])
        return offer
    }

    static let noOwnershipOffer = ServiceError(
        .ownershipOfferNotFound, .ownershipOfferNotFound, "no offer of this workspace's ownership to this key is open")
}
