import AttestCore
import AttestCrypto
import AttestHTTPServer
import AttestService

/// What a workspace's admins call (`/admin/v1/`, on the admin listener only): integrations,
/// devices, tokens, the audit log and the workspace's admin keys, as the authenticated key's
/// workspace and role allow (`WorkspaceAdmin` decides). Authenticated by `AdminAuthentication`.
struct AdminRoutes: Sendable {
    let admin: WorkspaceAdmin

    func register(in group: RouteGroup) {
        let api = group.group("/admin/v1", middleware: [AdminAuthentication(admin: admin)])
        api.on("GET", "/me", name: "admin_me", me)
        api.on("GET", "/integrations", name: "admin_integrations", integrations)
        api.on("POST", "/integrations", name: "admin_integration_create", create)
        api.on("GET", "/integrations/{client_id}", name: "admin_integration", integration)
        api.on("POST", "/integrations/{client_id}/revoke", name: "admin_integration_revoke", revoke)
        api.on("POST", "/integrations/{client_id}/suspend", name: "admin_integration_suspend") { context in
            try suspend(&context, true)
        }
        api.on("POST", "/integrations/{client_id}/resume", name: "admin_integration_resume") { context in
            try suspend(&context, false)
        }
        api.on("POST", "/integrations/{client_id}/policy", name: "admin_integration_policy", policy)
        // The same update as a partial update of the integration (REST clients expect PATCH).
        api.on("PATCH", "/integrations/{client_id}", name: "admin_integration_policy", policy)
        api.on("GET", "/integrations/{client_id}/devices", name: "admin_devices", devices)
        api.on("GET", "/integrations/{client_id}/verifications", name: "admin_verifications", verifications)
        api.on("GET", "/integrations/{client_id}/debug-tokens", name: "admin_debug_tokens", debugTokens)
        api.on("POST", "/integrations/{client_id}/debug-tokens", name: "admin_debug_token_create", createDebugToken)
        api.on("DELETE", "/integrations/{client_id}/debug-tokens/{id}", name: "admin_debug_token_revoke", revokeDebugToken)
        api.on("POST", "/devices/{key_id}/block", name: "admin_device_block", block)
        api.on("POST", "/devices/{key_id}/unblock", name: "admin_device_unblock", unblock)
        api.on("GET", "/devices/{key_id}/tokens", name: "admin_device_tokens", deviceTokens)
        api.on("POST", "/tokens/revoke", name: "admin_token_revoke", revokeToken)
        api.on("GET", "/audit", name: "admin_audit", audit)
        api.on("GET", "/audit/export", name: "admin_audit_export", auditExport)
        api.on("GET", "/keys", name: "admin_keys", keys)
        api.on("POST", "/keys", name: "admin_key_create", createKey)
        api.on("POST", "/keys/{key_id}/revoke", name: "admin_key_revoke", revokeKey)
        api.on("GET", "/ownership", name: "admin_ownership", ownership)
        api.on("POST", "/ownership/offer", name: "admin_ownership_offer", offerOwnership)
        api.on("DELETE", "/ownership/offer", name: "admin_ownership_withdraw", withdrawOwnership)
        api.on("POST", "/ownership/accept", name: "admin_ownership_accept", acceptOwnership)
        api.on("POST", "/keys/{key_id}/disable", name: "admin_key_disable") { context throws in try setKeyDisabled(&context, true) }
        api.on("POST", "/keys/{key_id}/enable", name: "admin_key_enable") { context throws in try setKeyDisabled(&context, false) }
    }

    /// The authenticated principal (the middleware set it, or refused the request).
    private static func principal(_ context: RequestContext) throws(Problem) -> AdminPrincipal {
        guard let principal = context.principal else { throw Problem(ServiceError.adminUnauthenticated) }
        return principal
    }

    private func me(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        return JSONBody.response(
            [
                ("key_id", principal.keyID), ("name", principal.name), ("workspace_id", principal.workspaceID),
                ("role", principal.role.rawValue),
            ] + admin.capabilities(principal).map { ($0.0, $0.1 as any Sendable) })
    }

    private func integrations(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let list = try admin.integrations(principal)
        return JSONBody.response([("integrations", JSONValue.array(list.map { AdminJSON.integration($0.0, counts: $0.1) }))])
    }

    private func integration(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let clientID = context.parameter("client_id")
        context.log.clientID = clientID
        let record = try admin.integration(principal, clientID: clientID)
        return JSONBody.response(AdminJSON.integrationMembers(record, counts: nil))
    }

    private func create(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let body = try AdminBody(context.request)
        let name = try body.string(.name)
        let teamID = try body.string(.teamID)
        let bundleIDs = try body.strings(.bundleIDs)
        let environments = try body.environments()
        let policy = try body.policy(current: nil)
        let record = try admin.create(
            principal, name: name, teamID: teamID, bundleIDs: bundleIDs, environments: environments,
            maxLiveTokensPerDevice: policy.maxLiveTokens, policy: policy.policy)
        context.log.clientID = record.clientID
        return JSONBody.response(AdminJSON.integrationMembers(record, counts: nil), status: 201)
    }

    private func revoke(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let clientID = context.parameter("client_id")
        context.log.clientID = clientID
        let body = try AdminBody(context.request)
        // Why a confirmation in the request: revocation is permanent, so a stray or replayed call
        // without the client ID typed back does nothing.
        guard case .string(let confirm)? = body.members["confirm"], confirm == clientID else {
            throw Problem.malformed(.field(.confirm), "revocation is permanent: send {\"confirm\": \"<client_id>\"} to confirm it")
        }
        let summary = try admin.revoke(principal, clientID: clientID)
        let record = try admin.integration(principal, clientID: clientID)
        return JSONBody.response(
            AdminJSON.integrationMembers(record, counts: nil) + [
                ("already_revoked", !summary.changed), ("tokens_revoked", summary.tokensRevoked),
                ("devices_blocked", summary.devicesBlocked),
            ])
    }

    private func suspend(_ context: inout RequestContext, _ suspended: Bool) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let clientID = context.parameter("client_id")
        context.log.clientID = clientID
        let record = try admin.setSuspended(principal, clientID: clientID, suspended)
        return JSONBody.response(AdminJSON.integrationMembers(record, counts: nil))
    }

    private func policy(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let clientID = context.parameter("client_id")
        context.log.clientID = clientID
        let body = try AdminBody(context.request)
        let current = try admin.integration(principal, clientID: clientID)
        let policy = try body.policy(current: current)
        let record = try admin.updatePolicy(
            principal, clientID: clientID, policy: policy.policy, maxLiveTokensPerDevice: policy.maxLiveTokens)
        return JSONBody.response(AdminJSON.integrationMembers(record, counts: nil))
    }

    private func devices(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let clientID = context.parameter("client_id")
        context.log.clientID = clientID
        let query = try AdminListing(query: context.request.query).deviceQuery()
        let page = try admin.devices(principal, clientID: clientID, query: query)
        return JSONBody.response([
            ("devices", JSONValue.array(page.devices.map(AdminJSON.device))),
            ("next_cursor", page.next.map(AdminListing.deviceCursorText)),
        ])
    }

    /// The key ID in the path as the devices list shows it: 64 hex digits.
    private static func keyID(_ context: RequestContext) throws(Problem) -> [UInt8] {
        let text = context.parameter("key_id")
        guard text.utf8.count == 64, let keyID = Hex.decode(text.lowercased()), keyID.count == 32 else {
            throw Problem.malformed(.field(.keyID), "key_id must be 64 hex digits, as the devices list shows it")
        }
        return keyID
    }

    private func deviceTokens(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let tokens = try admin.deviceTokens(principal, keyID: try Self.keyID(context))
        return JSONBody.response([
            (
                "tokens",
                JSONValue.array(
                    tokens.map { token in
                        JSONValue.object([
                            ("sha256", Hex.encode(token.tokenHash)), ("issued_at", token.issuedAt), ("expires_at", token.expiresAt),
                            ("debug", token.debugTokenID != nil),
                        ])
                    })
            )
        ])
    }

    private func block(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let keyID = try Self.keyID(context)
        let tokens = try admin.blockDevice(principal, keyID: keyID)
        return JSONBody.response([("key_id", Hex.encode(keyID)), ("status", "blocked"), ("tokens_revoked", tokens)])
    }

    private func unblock(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let keyID = try Self.keyID(context)
        let changed = try admin.unblockDevice(principal, keyID: keyID)
        return JSONBody.response([("key_id", Hex.encode(keyID)), ("status", "active"), ("changed", changed)])
    }

    private func revokeToken(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let body = try AdminBody(context.request)
        // The token itself, or its SHA-256 as a device's token list names it.
        if case .string(let text)? = body.members["sha256"] {
            guard text.utf8.count == 64, let hash = Hex.decode(text.lowercased()) else {
                throw Problem.malformed(.field(.token), "sha256 must be 64 hex digits, as a device's token list shows it")
            }
            try admin.revokeToken(principal, hash: hash)
        } else {
            try admin.revokeToken(principal, token: try body.string(.token))
        }
        return JSONBody.response([("revoked", true)])
    }

    private func audit(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let query = try AdminListing(query: context.request.query).auditQuery(maximum: AuditQuery.maximumLimit)
        let page = try admin.auditPage(principal, query)
        return JSONBody.response([
            ("entries", JSONValue.array(page.entries.map(AdminJSON.auditEntry))),
            ("next_cursor", page.next.map(AdminListing.auditCursorText)),
        ])
    }

    /// The filtered rows as CSV or JSON lines, newest first, up to `AuditQuery.maximumExport` of
    /// them (the default): `Attestd-Next-Cursor` names where the rest starts, if there is more.
    private func auditExport(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let listing = try AdminListing(query: context.request.query)
        var query = try listing.auditQuery(maximum: AuditQuery.maximumExport)
        if listing.text(.limit) == nil { query.limit = AuditQuery.maximumExport }
        let export: AuditExport
        switch listing.text(.format) {
        case "csv"?: export = .csv
        case "jsonl"?: export = .jsonLines
        default: throw Problem.malformed(.field(.format), "format must be csv or jsonl")
        }
        let page = try admin.auditPage(principal, query)
        var headers = [
            HTTPHeader(name: "Content-Type", value: export.contentType),
            HTTPHeader(name: "Content-Disposition", value: "attachment; filename=\"attestd-audit.\(export.fileExtension)\""),
        ]
        if let next = page.next { headers.append(HTTPHeader(name: "Attestd-Next-Cursor", value: AdminListing.auditCursorText(next))) }
        return HTTPResponse(status: 200, headers: headers, body: Array(export.render(page.entries).utf8))
    }

    private func keys(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let keys = try admin.keys(principal)
        let now = admin.clock.now()
        return JSONBody.response([("keys", JSONValue.array(keys.map { JSONValue.object(AdminJSON.keyMembers($0, at: now)) }))])
    }

    private func createKey(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let body = try AdminBody(context.request)
        let name = try body.string(.name)
        guard let role = AdminRole(rawValue: try body.string(.role)) else {
            throw Problem.malformed(.field(.role), "role must be user, developer, admin, owner or primary_owner")
        }
        let issued = try admin.createKey(principal, name: name, role: role, expiresIn: try body.seconds(.expiresIn))
        return JSONBody.response(AdminJSON.keyMembers(issued.record, at: issued.record.createdAt) + [("key", issued.secret)], status: 201)
    }

    private func revokeKey(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let id = context.parameter("key_id")
        let body = context.request.body.isEmpty ? nil : try AdminBody(context.request)
        switch body?.members["compromised"] {
        case nil, .bool(false)?:
            try admin.revokeKey(principal, id: id)
            return JSONBody.response([("id", id), ("status", "revoked")])
        case .bool(true)?:
            // A leaked key: it and every key it created, and theirs (the console's "It leaked").
            let report = try admin.revokeCompromisedKey(principal, id: id)
            return JSONBody.response([
                ("id", id), ("status", "revoked"), ("revoked", JSONValue.array(report.revoked.map { JSONValue.string($0.id) })),
                ("already_revoked", JSONValue.array(report.alreadyRevoked.map { JSONValue.string($0.id) })),
                ("changes", report.changes.count),
            ])
        default:
            throw Problem.malformed(.field(.compromised), "compromised must be true or false")
        }
    }

    /// Disables or enables a key: the key as it is now, and `changed` false when it was so already.
    private func setKeyDisabled(_ context: inout RequestContext, _ disabled: Bool) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let id = context.parameter("key_id")
        let (key, changed) = try admin.setKeyDisabled(principal, id: id, disabled)
        return JSONBody.response(AdminJSON.keyMembers(key, at: admin.clock.now()) + [("changed", changed)])
    }

    /// `?range=24h` (hourly, the default) or `30d` (daily): verified, refused and tokens per
    /// bucket, refusals by reason per bucket and over the range.
    private func verifications(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let clientID = context.parameter("client_id")
        context.log.clientID = clientID
        let listing = try AdminListing(query: context.request.query)
        guard let range = VerificationSeries.Range(rawValue: listing.text(.range) ?? "24h") else {
            throw Problem.malformed(.field(.range), "range must be 24h or 30d")
        }
        let series = try admin.verifications(principal, clientID: clientID, range: range)
        let byReason: ([(String, Int64)]) -> JSONValue = { pairs in .object(pairs.map { ($0.0, $0.1 as any Sendable) }) }
        let buckets = series.buckets.map { bucket -> JSONValue in
            .object([
                ("start", bucket.start), ("verified", bucket.verified), ("refused", bucket.refused), ("tokens", bucket.tokens),
                ("refusals", byReason(bucket.refusals.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })),
            ])
        }
        return JSONBody.response([
            ("range", range.rawValue), ("bucket_seconds", series.bucketSeconds), ("buckets", JSONValue.array(buckets)),
            ("refusals", byReason(series.refusals.map { ($0.reason, $0.count) })),
        ])
    }

    // MARK: Ownership

    private static func offerMembers(_ offer: OwnershipOffer) -> [(String, any Sendable)] {
        [("from_key_id", offer.fromKeyID), ("to_key_id", offer.toKeyID), ("created_at", offer.createdAt), ("expires_at", offer.expiresAt)]
    }

    /// The open offer the caller gave or may accept, or null.
    private func ownership(_ context: inout RequestContext) throws -> HTTPResponse {
        let offer = try admin.ownershipOffer(try Self.principal(context))
        return JSONBody.response([("offer", offer.map { JSONValue.object(Self.offerMembers($0)) } ?? JSONValue.null)])
    }

    private func offerOwnership(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let offer = try admin.offerOwnership(principal, to: try AdminBody(context.request).string(.keyID))
        return JSONBody.response(Self.offerMembers(offer), status: 201)
    }

    private func withdrawOwnership(_ context: inout RequestContext) throws -> HTTPResponse {
        JSONBody.response([("withdrawn", try admin.withdrawOwnershipOffer(try Self.principal(context)))])
    }

    private func acceptOwnership(_ context: inout RequestContext) throws -> HTTPResponse {
        let offer = try admin.acceptOwnership(try Self.principal(context))
        return JSONBody.response([("role", AdminRole.primaryOwner.rawValue)] + Self.offerMembers(offer))
    }

    // MARK: Debug tokens

    private func debugTokens(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let clientID = context.parameter("client_id")
        context.log.clientID = clientID
        let list = try admin.debugTokens(principal, clientID: clientID)
        return JSONBody.response([("debug_tokens", JSONValue.array(list.map { JSONValue.object($0.publicMembers) }))])
    }

    private func createDebugToken(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let clientID = context.parameter("client_id")
        context.log.clientID = clientID
        let body = try AdminBody(context.request)
        let name = try body.string(.name)
        let issued = try admin.createDebugToken(principal, clientID: clientID, name: name, lifetime: try body.seconds(.expiresIn))
        return JSONBody.response(issued.record.publicMembers + [("secret", issued.secret)], status: 201)
    }

    private func revokeDebugToken(_ context: inout RequestContext) throws -> HTTPResponse {
        let principal = try Self.principal(context)
        let clientID = context.parameter("client_id")
        context.log.clientID = clientID
        let id = context.parameter("id")
        try admin.revokeDebugToken(principal, clientID: clientID, id: id)
        return JSONBody.response([("id", id), ("revoked", true)])
    }
}
