-- 0007_challenges_without_foreign_key: a challenge's foreign key to its integration took a row
-- lock (FOR KEY SHARE) on the integration at every insert. PostgreSQL logs row locks to the WAL,
-- so issuing a challenge still waited for a WAL flush at commit although the table is UNLOGGED
-- (0006), and concurrent challenges of one integration shared the lock through MultiXacts.
-- The store now inserts a challenge with INSERT ... SELECT from its integration when that one is
-- active, which guards as well as the key did: integrations are never deleted. A challenge that
-- races a revocation may outlive it; it can never be used, because spending one (attest,
-- refresh) locks the integration and finds it revoked, and it expires within five minutes.
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

ALTER TABLE challenges DROP CONSTRAINT challenges_client_id_fkey;
