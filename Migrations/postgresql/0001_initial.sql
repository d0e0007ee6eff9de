-- 0001_initial: the token service's tables (PostgreSQL dialect of Migrations/sqlite/0001_initial.sql).
-- Times are Unix seconds (BIGINT). Identifiers that are digests or random values are raw BYTEA.
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

-- One customer app (or group of apps) allowed to ask for tokens.
CREATE TABLE integrations (
    client_id TEXT NOT NULL PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    name TEXT NOT NULL,
    team_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    -- Comma-separated, sorted: 'development', 'production' or 'development,production'.
    allowed_environments TEXT NOT NULL
        CHECK (allowed_environments IN ('development', 'production', 'development,production')),
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    CHECK ((status = 'revoked') = (revoked_at IS NOT NULL))
);

CREATE INDEX integrations_by_workspace ON integrations (workspace_id);

-- The bundle IDs an integration's App ID may use (rpIdHash = SHA-256 of team_id.bundle_id).
CREATE TABLE integration_bundle_ids (
    client_id TEXT NOT NULL REFERENCES integrations (client_id),
    bundle_id TEXT NOT NULL,
    PRIMARY KEY (client_id, bundle_id)
);

-- One-time challenges: valid until expires_at, usable once (consumed_at set on use).
CREATE TABLE challenges (
    id BYTEA NOT NULL PRIMARY KEY CHECK (octet_length(id) = 32),
    client_id TEXT NOT NULL REFERENCES integrations (client_id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL CHECK (expires_at > created_at),
    consumed_at BIGINT
);

CREATE INDEX challenges_by_expiry ON challenges (expires_at);
CREATE INDEX challenges_by_client ON challenges (client_id);

-- Attested App Attest keys. key_id is SHA-256 of the public key, which is the uncompressed P-256 point.
CREATE TABLE devices (
    key_id BYTEA NOT NULL PRIMARY KEY CHECK (octet_length(key_id) = 32),
    client_id TEXT NOT NULL REFERENCES integrations (client_id),
    public_key BYTEA NOT NULL CHECK (octet_length(public_key) = 65),
    counter BIGINT NOT NULL CHECK (counter BETWEEN 0 AND 4294967295),
    environment TEXT NOT NULL CHECK (environment IN ('development', 'production')),
    receipt BYTEA NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX devices_by_client ON devices (client_id);

-- Issued access tokens, stored only as SHA-256 of the token so a database leak yields no usable token.
CREATE TABLE tokens (
    token_hash BYTEA NOT NULL PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    client_id TEXT NOT NULL REFERENCES integrations (client_id),
    workspace_id TEXT NOT NULL,
    key_id BYTEA NOT NULL,
    scope TEXT NOT NULL,
    issued_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL CHECK (expires_at > issued_at)
);

CREATE INDEX tokens_by_expiry ON tokens (expires_at);
CREATE INDEX tokens_by_client ON tokens (client_id);
CREATE INDEX tokens_by_key ON tokens (key_id);
