-- 0003_device_binding: what a device key was attested under, checked at every refresh.
--   trust_anchor: SHA-256 (hex) of the root its attestation chained to. A key attested while a test
--                 root was trusted cannot refresh once Apple's root is back, and the other way round.
--   app_id:       the App ID (TEAMID.bundle) it attested as: its assertions must carry that App ID's
--                 rpIdHash, not another bundle ID of the same integration.
-- Keys attested before this migration had Apple's root (the default) and an unrecorded App ID
-- (NULL: any of the integration's App IDs is accepted, as before).
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

ALTER TABLE devices ADD COLUMN trust_anchor TEXT NOT NULL
    DEFAULT '1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932';
ALTER TABLE devices ADD COLUMN app_id TEXT;
