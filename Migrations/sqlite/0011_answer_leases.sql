-- 0011_answer_leases: the epoch every change that can turn a token's 200 into a 401 raises in
-- its own transaction (written once for both stores). SQLite's answers kept in memory need
-- nothing more: any commit, by any process, retires them (SQLiteChangeStamp). On PostgreSQL
-- this migration also creates the nodes' leases (docs/ARCHITECTURE.md, "Token answers from
-- memory"); the file keeps the two dialects' numbering the same, as the embedder requires.
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

CREATE TABLE answer_epoch (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    epoch INTEGER NOT NULL
) STRICT;
INSERT INTO answer_epoch (id, epoch) VALUES (1, 0);
