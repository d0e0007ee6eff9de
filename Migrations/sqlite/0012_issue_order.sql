-- 0012_issue_order: an order of issue that cannot tie. issued_at and created_at are whole seconds,
-- so "the device's newest N tokens" broke its ties by the token's hash, which is random: a device
-- that refreshed twice in one second could lose the token minted just before its newest one and
-- keep an older one. tokens becomes a rowid table whose seq (the rowid) SQLite assigns above every
-- row present at each insert; the rows already there keep their relative order (issued_at, then
-- the hash that broke their ties before). integrations, devices and admin_keys are rowid tables
-- already: their rowid is their order of issue, and the statements that list them use it.
-- A token is still looked up by its hash, now through the UNIQUE index on token_hash.
-- Embedded into the binary by scripts/embed; never edit once shipped.

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
