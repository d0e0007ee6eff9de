-- 0013_admin_keys_and_verification_counts, release 0.4.0's one migration (a binary runs on its
-- own schema and the next one only, so a release adds one), in four parts.
--
-- Part 1: an admin key gets the lifecycle of a cloud provider's access keys:
--   admin_keys.expires_at: an optional expiry chosen at creation; the key is refused from then on.
--   admin_keys.disabled_at: set while the key is disabled (refused, its sessions ended), cleared
--     when it is enabled again; revocation stays permanent.
--   admin_keys.last_used_at: the last request or sign-in with the key, written at most once a
--     minute.
-- Expand-only: 0.3.0 nodes read and write admin_keys by named columns, so they run on this schema
-- while a fleet upgrades (they do not know to refuse a disabled or expired key: disable and expiry
-- hold on every node once all run 0.4.0; docs/OPERATIONS.md, upgrades).
-- Embedded into the binary by scripts/embed; never edit once shipped.

ALTER TABLE admin_keys ADD COLUMN expires_at BIGINT;
ALTER TABLE admin_keys ADD COLUMN disabled_at BIGINT;
ALTER TABLE admin_keys ADD COLUMN last_used_at BIGINT;

-- Part 2, each integration's verifications per hour (the console's charts), a rollup:
--   verification_counts: per integration, hour (Unix seconds, a multiple of 3600), kind
--     (attestation, assertion, debug: a debug token's exchange) and outcome ('ok' or the check or
--     reason that refused it), how many. Each node counts in memory and adds its counts at every
--     purge tick (INSERT ... ON CONFLICT DO UPDATE adds), so the rows are bounded by integrations x
--     hours x outcomes, never by requests; the purge deletes rows older than 31 days. Nodes still
--     on 0.3.0 count nothing here.

CREATE TABLE verification_counts (
    client_id TEXT NOT NULL,
    hour BIGINT NOT NULL CHECK (hour % 3600 = 0),
    kind TEXT NOT NULL CHECK (kind IN ('attestation', 'assertion', 'debug')),
    outcome TEXT NOT NULL,
    count BIGINT NOT NULL CHECK (count > 0),
    PRIMARY KEY (client_id, hour, kind, outcome)
);

CREATE INDEX verification_counts_by_hour ON verification_counts (hour);

-- Part 3, ownership passed on in two steps: the primary owner offers it to another key of the
-- workspace, whose holder accepts it (the two keys' roles swap in one transaction) before it
-- expires.
--   ownership_offers: the workspace's one open offer: from which key, to which, when made and
--     until when it can be accepted.

CREATE TABLE ownership_offers (
    workspace_id TEXT NOT NULL PRIMARY KEY,
    from_key_id TEXT NOT NULL REFERENCES admin_keys (id),
    to_key_id TEXT NOT NULL REFERENCES admin_keys (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL CHECK (expires_at > created_at)
);

-- Part 4, the device listing by last activity (the console's "Last seen" order): an index on the
-- integration's devices by updated_at, which every refresh writes anyway. On a large PostgreSQL
-- table, build it beforehand without blocking writes (CREATE INDEX CONCURRENTLY IF NOT EXISTS
-- devices_by_client_and_use ON devices (client_id, updated_at, key_id); docs/OPERATIONS.md,
-- upgrades): the statement below then finds it present.

CREATE INDEX IF NOT EXISTS devices_by_client_and_use ON devices (client_id, updated_at, key_id);
