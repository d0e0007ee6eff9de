-- 0009_admin_keys: the workspace admins' side (the admin API and the console).
--   admin_keys: one row per admin key: its public ID (admk_ + 16 hex digits), the SHA-256 of the
--     secret (adm_ + 256 random bits, shown once and never stored), its workspace, role and name
--     (the audit log's actor), and when it was revoked (refused from the next request on).
--   admin_sessions: a console sign-in: the SHA-256 of the session cookie's value, the key it
--     signed in with (a session of a revoked key is dead too) and its absolute expiry.
--   audit_log.workspace_id: the workspace an action of the admin API was taken in, so that a
--     workspace's admins read its own audit rows (NULL for rows written before, or by attestctl).
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

CREATE TABLE admin_keys (
    id TEXT NOT NULL PRIMARY KEY,
    key_hash BYTEA NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'developer', 'admin', 'owner', 'primary_owner')),
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);

CREATE INDEX admin_keys_by_workspace ON admin_keys (workspace_id, created_at);

CREATE TABLE admin_sessions (
    session_hash BYTEA NOT NULL PRIMARY KEY,
    key_id TEXT NOT NULL REFERENCES admin_keys (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE INDEX admin_sessions_by_key ON admin_sessions (key_id);

ALTER TABLE audit_log ADD COLUMN workspace_id TEXT;

CREATE INDEX audit_log_by_workspace ON audit_log (workspace_id, id);
