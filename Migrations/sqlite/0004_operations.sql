-- 0004_operations: what an operator needs in an incident.
--   integrations.suspended_at: set while an integration is paused (its tokens and devices refused,
--     nothing deleted); NULL again on resume. Revocation stays the permanent lever.
--   integrations.max_live_tokens_per_device: when set, a refresh keeps only the device's newest N
--     tokens, so a resold token dies within N refreshes of the genuine device.
--   audit_log: every administrative action, with the person behind it.
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

ALTER TABLE integrations ADD COLUMN suspended_at INTEGER;
ALTER TABLE integrations ADD COLUMN max_live_tokens_per_device INTEGER
    CHECK (max_live_tokens_per_device IS NULL OR max_live_tokens_per_device >= 1);

CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    detail TEXT NOT NULL
) STRICT;

CREATE INDEX audit_log_by_time ON audit_log (at);
