-- 0011_answer_leases: token answers kept in memory by attestd nodes, withdrawn before a
-- revocation returns (docs/ARCHITECTURE.md, "Token answers from memory").
-- answer_epoch: one row, its epoch raised in the same transaction as every change that can turn a
-- token's 200 into a 401 (a token revoked, a device blocked, an integration revoked, suspended or
-- given a per-device token cap).
-- answer_leases: one row per running node that answers from memory: the last epoch it has applied
-- (every answer kept from before it discarded) and until when the database's clock lets it answer
-- from memory at all. A change returns once every lease that has not expired acknowledges its
-- epoch. Logged like every security decision: after a crash of the server, or on a promoted
-- standby, a lease is still there for the revocations that must wait for it.
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

CREATE TABLE answer_epoch (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    epoch BIGINT NOT NULL
);
INSERT INTO answer_epoch (id, epoch) VALUES (1, 0);

CREATE TABLE answer_leases (
    node TEXT PRIMARY KEY,
    acked_epoch BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
