-- 0006_cheaper_refresh: a refresh (a challenge, then an assertion for a token) costs one commit
-- that waits for the disk and one round trip for its transaction, instead of two and eight.
--
-- 1. challenges is UNLOGGED: issuing a challenge writes no WAL, so its commit does not wait for
--    a flush. A challenge lives five minutes and is worth nothing once spent; after a crash of
--    PostgreSQL (or on a promoted standby, or a restored backup) the table is empty, so every
--    outstanding challenge is unknown: devices ask for a new one, and none can be used twice
--    (emptier is only ever stricter). A clean stop or restart keeps the table.
--
-- 2. attestd_refresh runs the refresh transaction server-side. The steps and their order are
--    those the SQLite store runs in its own transaction:
--    a. lock the integration's row against a concurrent revocation or suspension (both take it
--       FOR UPDATE first), and read its state; a revocation that committed first is seen here
--       (READ COMMITTED re-reads the row after waiting), one that comes later waits for this
--       commit and deletes the token. FOR KEY SHARE: the weakest lock that FOR UPDATE waits
--       for, and the one the tokens foreign key takes anyway, so concurrent refreshes of one
--       integration share it without a second lock mode on the row;
--    b. consume the challenge (compare-and-set on consumed_at): lost -> 'challenge_used';
--    c. refuse a revoked or missing integration, then a suspended one (the challenge stays spent);
--    d. advance the counter by compare-and-set on the value the assertion was verified against,
--       for an active device only; when nothing changed, a device that is not active (now) ->
--       'device_blocked', else -> 'counter_changed';
--    e. insert the token and, when the integration caps live tokens per device, delete all but
--       the newest p_keep_latest of the device's tokens -> 'advanced'.
-- The function runs as the statement's own transaction: it commits all of it or nothing.
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped: a
-- change to the tokens table that this function must follow is a new migration replacing it.

ALTER TABLE challenges SET UNLOGGED;

CREATE FUNCTION attestd_refresh(
    p_key_id BYTEA, p_previous BIGINT, p_counter BIGINT, p_at BIGINT, p_challenge_id BYTEA, p_keep_latest BIGINT,
    p_token_hash BYTEA, p_client_id TEXT, p_workspace_id TEXT, p_scope TEXT, p_issued_at BIGINT, p_expires_at BIGINT
) RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
    integration_status TEXT;
    integration_suspended_at BIGINT;
    device_status TEXT;
BEGIN
    SELECT status, suspended_at INTO integration_status, integration_suspended_at
        FROM integrations WHERE client_id = p_client_id FOR KEY SHARE;
    UPDATE challenges SET consumed_at = p_at WHERE id = p_challenge_id AND consumed_at IS NULL;
    IF NOT FOUND THEN
        RETURN 'challenge_used';
    END IF;
    IF integration_status IS DISTINCT FROM 'active' THEN
        RETURN 'integration_revoked';
    END IF;
    IF integration_suspended_at IS NOT NULL THEN
        RETURN 'integration_suspended';
    END IF;
    -- The counter's compare-and-set and the token in one statement: the token is inserted only
    -- when the UPDATE changed the device's row.
    WITH advanced AS (
        UPDATE devices SET counter = p_counter, updated_at = p_at
            WHERE key_id = p_key_id AND counter = p_previous AND status = 'active'
            RETURNING key_id
    )
    INSERT INTO tokens (token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at)
        SELECT p_token_hash, p_client_id, p_workspace_id, key_id, p_scope, p_issued_at, p_expires_at FROM advanced;
    IF NOT FOUND THEN
        SELECT status INTO device_status FROM devices WHERE key_id = p_key_id;
        IF device_status IS DISTINCT FROM 'active' THEN
            RETURN 'device_blocked';
        END IF;
        RETURN 'counter_changed';
    END IF;
    IF p_keep_latest IS NOT NULL THEN
        DELETE FROM tokens WHERE key_id = p_key_id AND token_hash NOT IN
            (SELECT token_hash FROM tokens WHERE key_id = p_key_id
                ORDER BY issued_at DESC, token_hash DESC LIMIT p_keep_latest);
    END IF;
    RETURN 'advanced';
END;
$$;
