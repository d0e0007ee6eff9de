-- 0012_issue_order_debug_tokens, release 0.3.0's one migration (a binary runs on its own schema
-- and the next one only, so a release adds one), in two parts.
--
-- Part 1, an order of issue that cannot tie. issued_at and created_at are whole seconds,
-- so "the device's newest N tokens" broke its ties by the token's hash, which is random: a device
-- that refreshed twice in one second could lose the token minted just before its newest one and
-- keep an older one. tokens becomes a rowid table whose seq (the rowid) SQLite assigns above every
-- row present at each insert; the rows already there keep their relative order (issued_at, then
-- the hash that broke their ties before). integrations, devices and admin_keys are rowid tables
-- already: their rowid is their order of issue, and the statements that list them use it.
-- A token is still looked up by its hash, now through the UNIQUE index on token_hash.

CREATE TABLE tokens_in_issue_order (
    seq INTEGER PRIMARY KEY,
    token_hash BLOB NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    client_id TEXT NOT NULL REFERENCES integrations (client_id),
    workspace_id TEXT NOT NULL,
    key_id BLOB NOT NULL,
    scope TEXT NOT NULL,
    issued_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL CHECK (expires_at > issued_at)
) STRICT;

INSERT INTO tokens_in_issue_order (token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at)
    SELECT token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at FROM tokens ORDER BY issued_at, token_hash;

DROP TABLE tokens;
ALTER TABLE tokens_in_issue_order RENAME TO tokens;

CREATE INDEX tokens_by_expiry ON tokens (expires_at);
CREATE INDEX tokens_by_client ON tokens (client_id);
-- A rowid table's index holds the rowid after its columns: (key_id, seq), the trim's order.
CREATE INDEX tokens_by_key ON tokens (key_id);

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
    secret_hash BLOB NOT NULL UNIQUE CHECK (length(secret_hash) = 32),
    key_id BLOB NOT NULL UNIQUE CHECK (length(key_id) = 32),
    client_id TEXT NOT NULL REFERENCES integrations (client_id),
    name TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL CHECK (expires_at > created_at),
    last_used_at INTEGER,
    minted INTEGER NOT NULL DEFAULT 0 CHECK (minted >= 0),
    revoked_at INTEGER
) STRICT;

CREATE INDEX debug_tokens_by_client ON debug_tokens (client_id);

ALTER TABLE tokens ADD COLUMN debug_token_id TEXT;
