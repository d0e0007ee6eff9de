-- 0002_rate_limits: token buckets that every node of a deployment shares (the per-integration
-- limit on new keys, which Apple asks to keep under about 100 per second per app: it must hold
-- for the whole deployment, not per node). tokens and updated_at (Unix seconds) are fractional.
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

CREATE TABLE rate_buckets (
    bucket TEXT NOT NULL PRIMARY KEY,
    tokens REAL NOT NULL,
    updated_at REAL NOT NULL
) STRICT, WITHOUT ROWID;
