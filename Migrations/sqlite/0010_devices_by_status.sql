-- 0010_devices_by_status: the gauge of active devices (counted at every purge tick) reads an
-- index of the status column instead of every device row: in SQLite the status column sits after
-- the receipt (4 KB, on overflow pages), so a million devices were 4 GB read each tick, in a read
-- transaction that held back checkpoints for a second (docs/BENCHMARKS.md, the purge at scale).
CREATE INDEX devices_by_status ON devices (status);
