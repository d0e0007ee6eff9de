-- 0006_unlogged_challenges: issuing a challenge writes no WAL, so its commit does not wait for a
-- flush (the SQLite store makes the same trade with synchronous=NORMAL for that one commit).
-- A challenge lives five minutes and is worth nothing once spent. A clean stop or restart keeps
-- the table; after a crash of PostgreSQL, on a promoted standby or in a restored backup it is
-- empty, so every outstanding challenge is unknown: devices ask for a new one, and none can be
-- used twice (emptier is only ever stricter). Consuming a challenge commits in the refresh's or
-- registration's own transaction, which is durable.
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

ALTER TABLE challenges SET UNLOGGED;
