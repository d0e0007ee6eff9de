-- 0012_issue_order: an order of issue that cannot tie. issued_at and created_at are whole seconds,
-- so "the device's newest N tokens" broke its ties by the token's hash, which is random: a device
-- that refreshed twice in one second could lose the token minted just before its newest one and
-- keep an older one. tokens, devices, integrations and admin_keys get seq, taken from a sequence
-- at insert (a binary that does not know the column still inserts: the default fills it). A
-- device's refreshes serialise on its row (the counter's compare-and-set), so its tokens' seq
-- follows their issue. SQLite uses its rowid instead (its own 0012).
-- The rows already there keep seq NULL: adding a column without a default, then setting the
-- default for later inserts, rewrites nothing (numbering a million tokens in place took 33 s here,
-- with the table locked). Every ordering puts them first, in the order they had before (the
-- time, then the key): a token's NULL is gone an hour after the upgrade, when it expires.
-- Embedded into the binary by scripts/embed; never edit once shipped.

CREATE SEQUENCE tokens_seq AS BIGINT;
ALTER TABLE tokens ADD COLUMN seq BIGINT;
ALTER TABLE tokens ALTER COLUMN seq SET DEFAULT nextval('tokens_seq');
ALTER SEQUENCE tokens_seq OWNED BY tokens.seq;

CREATE SEQUENCE devices_seq AS BIGINT;
ALTER TABLE devices ADD COLUMN seq BIGINT;
ALTER TABLE devices ALTER COLUMN seq SET DEFAULT nextval('devices_seq');
ALTER SEQUENCE devices_seq OWNED BY devices.seq;

CREATE SEQUENCE integrations_seq AS BIGINT;
ALTER TABLE integrations ADD COLUMN seq BIGINT;
ALTER TABLE integrations ALTER COLUMN seq SET DEFAULT nextval('integrations_seq');
ALTER SEQUENCE integrations_seq OWNED BY integrations.seq;

CREATE SEQUENCE admin_keys_seq AS BIGINT;
ALTER TABLE admin_keys ADD COLUMN seq BIGINT;
ALTER TABLE admin_keys ALTER COLUMN seq SET DEFAULT nextval('admin_keys_seq');
ALTER SEQUENCE admin_keys_seq OWNED BY admin_keys.seq;
