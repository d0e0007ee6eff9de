-- 0013_admin_key_lifecycle, release 0.4.0's one migration (a binary runs on its own schema and
-- the next one only, so a release adds one). An admin key gets the lifecycle of a cloud
-- provider's access keys:
--   admin_keys.expires_at: an optional expiry chosen at creation; the key is refused from then on.
--   admin_keys.disabled_at: set while the key is disabled (refused, its sessions ended), cleared
--     when it is enabled again; revocation stays permanent.
--   admin_keys.last_used_at: the last request or sign-in with the key, written at most once a
--     minute.
-- Expand-only: 0.3.0 nodes read and write admin_keys by named columns, so they run on this schema
-- while a fleet upgrades (they do not know to refuse a disabled or expired key: disable and expiry
-- hold on every node once all run 0.4.0; docs/OPERATIONS.md, upgrades).
-- Embedded into the binary by scripts/embed; never edit once shipped.

ALTER TABLE admin_keys ADD COLUMN expires_at INTEGER;
ALTER TABLE admin_keys ADD COLUMN disabled_at INTEGER;
ALTER TABLE admin_keys ADD COLUMN last_used_at INTEGER;
