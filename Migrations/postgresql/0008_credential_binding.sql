-- 0008_credential_binding: the SHA-256 of each device's credential certificate (the leaf of its
-- attestation), so that every receipt stored for the device, at attestation or refreshed from
-- Apple, must name that certificate (receipt field 3). NULL for keys attested before 0008: the
-- receipt refresher leaves those alone. Adding a nullable column without a default rewrites
-- nothing, so it is instant on a large table.
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

ALTER TABLE devices ADD COLUMN credential_sha256 BYTEA CHECK (credential_sha256 IS NULL OR octet_length(credential_sha256) = 32);
