-- 0012_issue_order_debug_tokens, release 0.3.0's one migration (a binary runs on its own schema
-- and the next one only, so a release adds one), in two parts.
--
-- Part 1, an order of issue that cannot tie. issued_at and created_at are whole seconds,
-- so "the device's newest N tokens" broke its ties by the token's hash, which is random: a device
-- that refreshed twice in one second could lose the token minted just before its newest one and
-- keep an older one. tokens, devices, integrations and admin_keys get seq, taken from a sequence
-- at insert (a binary that does not know the column still inserts: the default fills it). A
-- device's refreshes serialise on its row (the counter's compare-and-set), so its tokens' seq
-- follows their issue. SQLite uses its rowid instead (its own 0012).
-- The rows already there keep seq NULL: adding a column without a default, then setting the
-- default for later inserts, rewrites nothing (numbering a million tokens in place took 33 s here,
-- with the table locked). Every ordering puts them first, in the order they had before (the
-- time, then the key): a token's NULL is gone an hour after the upgrade, when it expires.

CREATE SEQUENCE tokens_seq AS BIGINT;
ALTER TABLE tokens ADD COLUMN seq BIGINT;
ALTER TABLE tokens ALTER COLUMN seq SET DEFAULT nextval('tokens_seq');
ALTER SEQUENCE tokens_seq OWNED BY tokens.seq;

CREATE SEQUENCE devices_seq AS BIGINT;
ALTER TABLE devices ADD COLUMN seq BIGINT;
ALTER TABLE devices ALTER COLUMN seq SET DEFAULT nextval('devices_seq');
ALTER SEQUENCE devices_seq OWNED BY devices.seq;

CREATE SEQUENCE integrations_seq AS BIGINT;
ALTER TABLE integrations ADD COLUMN seq BIGINT;
ALTER TABLE integrations ALTER COLUMN seq SET DEFAULT nextval('integrations_seq');
ALTER SEQUENCE integrations_seq OWNED BY integrations.seq;

CREATE SEQUENCE admin_keys_seq AS BIGINT;
ALTER TABLE admin_keys ADD COLUMN seq BIGINT;
ALTER TABLE admin_keys ALTER COLUMN seq SET DEFAULT nextval('admin_keys_seq');
ALTER SEQUENCE admin_keys_seq OWNED BY admin_keys.seq;

-- Part 2, debug tokens: development without a device (the iOS Simulator, previews, CI).
--   debug_tokens: one row per debug token of an integration: its public ID (dbgt_ + 16 hex
--     digits), the SHA-256 of its secret (dbg_ + 256 random bits, shown once and never stored),
--     the key ID its access tokens carry (32 random bytes that name no device: a revocation deletes
--     them through tokens_by_key, as a blocked device's), its name, who created it, its required
--     expiry, its last use, how many access tokens it minted, and when it was revoked.
--   tokens.debug_token_id: the debug token that minted the access token (NULL: an attested
--     device's), so that introspection and authorize can say "debug".
-- Embedded into the binary by scripts/embed; never edit once shipped.

CREATE TABLE debug_tokens (
    id TEXT NOT NULL PRIMARY KEY,
    secret_hash BYTEA NOT NULL UNIQUE CHECK (octet_length(secret_hash) = 32),
    key_id BYTEA NOT NULL UNIQUE CHECK (octet_length(key_id) = 32),
    client_id TEXT NOT NULL REFERENCES integrations (client_id),
    name TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL CHECK (expires_at > created_at),
    last_used_at BIGINT,
    minted BIGINT NOT NULL DEFAULT 0 CHECK (minted >= 0),
    revoked_at BIGINT,
    -- The order of issue (0012), as tokens' seq.
    seq BIGSERIAL NOT NULL
);

CREATE INDEX debug_tokens_by_client ON debug_tokens (client_id);

ALTER TABLE tokens ADD COLUMN debug_token_id TEXT;
