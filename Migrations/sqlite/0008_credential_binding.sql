-- 0008_credential_binding: the SHA-256 of each device's credential certificate (the leaf of its
-- attestation), so that every receipt stored for the device, at attestation or refreshed from
-- Apple, must name that certificate (receipt field 3). NULL for keys attested before 0008: the
-- receipt refresher leaves those alone.
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

ALTER TABLE devices ADD COLUMN credential_sha256 BLOB CHECK (credential_sha256 IS NULL OR length(credential_sha256) = 32);
