import AttestCore
import AttestCrypto
import AttestHTTPServer
import AttestService

/// The admin API's JSON shapes: integrations, devices, audit entries and keys.
enum AdminJSON {
    /// `production`, `development` or `both`, as `attestctl --environment` takes it.
    static func environment(_ environments: [AppAttestEnvironment]) -> String {
        let set = Set(environments)
        return set.count == 2 ? "both" : set.first?.rawValue ?? "production"
    }

    /// `active`, `suspended` or `revoked`.
    static func status(_ record: IntegrationRecord) -> String {
        record.status == .revoked ? "revoked" : record.suspendedAt == nil ? "active" : "suspended"
    }

    static func integrationMembers(_ record: IntegrationRecord, counts: IntegrationCounts?) -> [(String, any Sendable)] {
        var members: [(String, any Sendable)] = [
            ("client_id", record.clientID), ("name", record.name), ("workspace_id", record.workspaceID), ("team_id", record.teamID),
            ("bundle_ids", record.bundleIDs), ("environment", environment(record.environments)), ("status", status(record)),
            ("created_at", record.createdAt), ("revoked_at", record.revokedAt), ("suspended_at", record.suspendedAt),
            (
                "policy",
                JSONValue.object([
                    ("require_valid_receipt", record.policy.requireValidReceipt), ("max_risk_metric", record.policy.maxRiskMetric),
                    ("max_new_keys_per_hour", record.policy.maxNewKeysPerHour),
                    ("max_live_tokens_per_device", record.maxLiveTokensPerDevice),
                ])
            ),
        ]
        if let counts { members += [("devices", counts.devices), ("live_tokens", counts.liveTokens)] }
        return members
    }

    static func integration(_ record: IntegrationRecord, counts: IntegrationCounts?) -> JSONValue {
        JSONValue.object(integrationMembers(record, counts: counts))
    }

    static func device(_ device: DeviceListEntry) -> JSONValue {
        JSONValue.object([
            ("key_id", Hex.encode(device.keyID)), ("key_id_base64", Base64Text.encode(device.keyID, .standard)),
            ("status", device.status == .active ? "active" : "blocked"), ("counter", device.counter),
            ("environment", device.environment.rawValue), ("receipt_verdict", device.receiptState.map { $0.verdict.description }),
            ("risk_metric", device.receiptState?.riskMetric), ("live_tokens", device.liveTokens), ("created_at", device.createdAt),
            ("updated_at", device.updatedAt),
        ])
    }

    static func auditEntry(_ row: AuditListEntry) -> JSONValue {
        let entry = row.entry
        return JSONValue.object([
            ("id", row.id), ("at", entry.at), ("actor", entry.actor), ("action", entry.action.rawValue), ("target", entry.target),
            ("detail", entry.detail),
        ])
    }

    /// A key's members: never its secret nor its hash.
    static func keyMembers(_ key: AdminKeyRecord, at time: Int64) -> [(String, any Sendable)] {
        [
            ("id", key.id), ("name", key.name), ("workspace_id", key.workspaceID), ("role", key.role.rawValue),
            ("status", key.status(at: time).rawValue), ("created_at", key.createdAt), ("expires_at", key.expiresAt),
            ("disabled_at", key.disabledAt), ("revoked_at", key.revokedAt), ("last_used_at", key.lastUsedAt),
        ]
    }
}

/// A JSON body of the admin API: one object of strings, arrays of strings, whole numbers,
/// booleans and nulls, duplicate keys refused.
struct AdminBody {
    let members: [String: FlatJSON.Value]

    init(_ request: HTTPRequest) throws(Problem) {
        try RequestDecoding.requireContentType(request, .json)
        members = try RequestDecoding.parsingJSON("one JSON object") { () throws(FlatJSON.Failure) in try FlatJSON.values(request.body) }
    }

    /// A required string member.
    func string(_ field: ServiceError.RequestField) throws(Problem) -> String {
        guard let value = members[field.rawValue] else { throw Problem.malformed(.missing(field), "\(field.rawValue) is required") }
        guard case .string(let text) = value else { throw Problem.malformed(.field(field), "\(field.rawValue) must be a string") }
        return text
    }

    /// A required array of strings.
    func strings(_ field: ServiceError.RequestField) throws(Problem) -> [String] {
        guard let value = members[field.rawValue] else { throw Problem.malformed(.missing(field), "\(field.rawValue) is required") }
        guard case .strings(let list) = value else {
            throw Problem.malformed(.field(field), "\(field.rawValue) must be an array of strings")
        }
        return list
    }

    /// An optional whole number of seconds (`expires_in`); nil when absent or null.
    func seconds(_ field: ServiceError.RequestField) throws(Problem) -> Int64? {
        switch members[field.rawValue] {
        case nil, .null?: return nil
        case .integer(let seconds)?: return Int64(seconds)
        default: throw Problem.malformed(.field(field), "\(field.rawValue) must be a whole number of seconds")
        }
    }

    /// `environment`: production (the default, as attestctl's), development or both.
    func environments() throws(Problem) -> Set<AppAttestEnvironment> {
        switch members["environment"] {
        case nil, .null?, .string("production")?: return [.production]
        case .string("development")?: return [.development]
        case .string("both")?: return [.production, .development]
        default: throw Problem.malformed(.field(.environment), "environment must be production, development or both")
        }
    }

    /// The policy members over `current`'s (a member left out keeps its value; null clears a limit).
    func policy(current: IntegrationRecord?) throws(Problem) -> (policy: IntegrationPolicy, maxLiveTokens: Int?) {
        var policy = current?.policy ?? IntegrationPolicy()
        var maxLiveTokens = current?.maxLiveTokensPerDevice
        switch members["require_valid_receipt"] {
        case nil: break
        case .bool(let flag)?: policy.requireValidReceipt = flag
        default: throw Problem.malformed(.field(.policy), "require_valid_receipt must be true or false")
        }
        policy.maxRiskMetric = try limit("max_risk_metric", 0...1_000_000, else: policy.maxRiskMetric)
        policy.maxNewKeysPerHour = try limit("max_new_keys_per_hour", 1...1_000_000, else: policy.maxNewKeysPerHour)
        maxLiveTokens = try limit("max_live_tokens_per_device", 1...1000, else: maxLiveTokens)
        return (policy, maxLiveTokens)
    }

    private func limit(_ name: String, _ range: ClosedRange<Int>, else current: Int?) throws(Problem) -> Int? {
        switch members[name] {
        case nil: return current
        case .null?: return nil
        case .integer(let number)? where range.contains(number): return number
        default:
            throw Problem.malformed(
                .field(.policy), "\(name) must be null or a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
    }
}

/// The audit export's two formats: one row per line either way, newest first.
enum AuditExport {
    case csv
    case jsonLines

    var contentType: String {
        switch self {
        case .csv: "text/csv; charset=utf-8"
        case .jsonLines: "application/jsonl; charset=utf-8"
        }
    }

    var fileExtension: String {
        switch self {
        case .csv: "csv"
        case .jsonLines: "jsonl"
        }
    }

    func render(_ rows: [AuditListEntry]) -> String {
        switch self {
        case .jsonLines:
            return rows.map { JSONText.render(AdminJSON.auditEntry($0), pretty: false) + "\n" }.joined()
        case .csv:
            var out = "id,at,actor,action,target,detail\r\n"
            for row in rows {
                let entry = row.entry
                let fields = [String(row.id), String(entry.at), entry.actor, entry.action.rawValue, entry.target, entry.detail]
                out += fields.map(Self.csvField).joined(separator: ",") + "\r\n"
            }
            return out
        }
    }

    /// RFC 4180 quoting, and a leading `=`, `+`, `-` or `@` defused with a quote mark (a
    /// spreadsheet would run it as a formula: names are chosen by administrators).
    static func csvField(_ text: String) -> String {
        var text = text
        if let first = text.first, "=+-@\t\r".contains(first) { text = "'" + text }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacing("\"", with: "\"\"") + "\""
    }
}
