-- 0011_answer_leases: token answers kept in memory by attestd nodes, withdrawn before a
-- revocation returns (docs/ARCHITECTURE.md, "Token answers from memory").
-- answer_epoch: one row. Triggers raise it in the transaction of every change that can turn a
-- token's 200 into a 401, whichever binary makes it (a node or an attestctl of the previous
-- release too): a device's or an integration's status, suspension or token cap updated, or a
-- token deleted. Two deletions say in their transaction that they retire nothing
-- (attestd.deletions_retire_nothing = on) and raise nothing: the purge (expired tokens only) and
-- a capped integration's refresh (whose tokens no node keeps).
-- answer_leases: one row per running node that answers from memory: the last epoch it has applied
-- (every answer kept from before it discarded) and until when, on the database's clock, it may
-- answer from memory at all. A change returns once every lease that has not expired acknowledges
-- the epoch. Logged like every security decision: after a crash of the server, or on a promoted
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

CREATE FUNCTION raise_answer_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE answer_epoch SET epoch = epoch + 1 WHERE id = 1;
    RETURN NULL;
END
$$;

CREATE FUNCTION raise_answer_epoch_for_deleted_tokens() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('attestd.deletions_retire_nothing', true), '') <> 'on'
        AND EXISTS (SELECT 1 FROM deleted_tokens) THEN
        UPDATE answer_epoch SET epoch = epoch + 1 WHERE id = 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER answers_retired_by_token_deletion AFTER DELETE ON tokens
    REFERENCING OLD TABLE AS deleted_tokens FOR EACH STATEMENT EXECUTE FUNCTION raise_answer_epoch_for_deleted_tokens();
CREATE TRIGGER answers_retired_by_device_status AFTER UPDATE OF status ON devices
    FOR EACH STATEMENT EXECUTE FUNCTION raise_answer_epoch();
CREATE TRIGGER answers_retired_by_integration_state AFTER UPDATE OF status, suspended_at, max_live_tokens_per_device ON integrations
    FOR EACH STATEMENT EXECUTE FUNCTION raise_answer_epoch();
