-- 0005_receipts: Apple's receipt for each device key, its verdict and fraud-risk metric, and each
-- integration's policy on them.
--   devices.receipt_verdict: 'valid', or the receipt_* check that refused it; NULL for keys attested
--     before attestd checked receipts.
--   devices.receipt_type .. risk_metric: the parsed fields of the newest receipt (ATTEST at
--     attestation, RECEIPT after an exchange with Apple); receipt_refreshed_at: the last exchange.
--   integrations.require_valid_receipt (0/1), max_risk_metric, max_new_keys_per_hour: the policy.
--   fraud_keys: an integration's DeviceCheck key for Apple's attestationData endpoint, sealed with
--     the key of attestd's --secrets-key-file (never stored in the clear).
-- Embedded into the binary at build time (Plugins/EmbedMigrations); never edit once shipped.

ALTER TABLE devices ADD COLUMN receipt_verdict TEXT;
ALTER TABLE devices ADD COLUMN receipt_type TEXT CHECK (receipt_type IS NULL OR receipt_type IN ('ATTEST', 'RECEIPT'));
ALTER TABLE devices ADD COLUMN receipt_created_at INTEGER;
ALTER TABLE devices ADD COLUMN receipt_expires_at INTEGER;
ALTER TABLE devices ADD COLUMN risk_metric INTEGER;
ALTER TABLE devices ADD COLUMN receipt_refreshed_at INTEGER;

CREATE INDEX devices_by_client_and_creation ON devices (client_id, created_at);

ALTER TABLE integrations ADD COLUMN require_valid_receipt INTEGER NOT NULL DEFAULT 0 CHECK (require_valid_receipt IN (0, 1));
ALTER TABLE integrations ADD COLUMN max_risk_metric INTEGER CHECK (max_risk_metric IS NULL OR max_risk_metric >= 0);
ALTER TABLE integrations ADD COLUMN max_new_keys_per_hour INTEGER CHECK (max_new_keys_per_hour IS NULL OR max_new_keys_per_hour >= 1);

CREATE TABLE fraud_keys (
    client_id TEXT NOT NULL PRIMARY KEY REFERENCES integrations (client_id),
    key_id TEXT NOT NULL,
    sealed_key BLOB NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
