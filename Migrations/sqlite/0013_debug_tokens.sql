-- 0013_debug_tokens: development without a device (the iOS Simulator, previews, CI).
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
