-- Issue 28, decision 5 (docs/archive.md): a third copy of every read model,
-- its snapshot at the cut. Before `stockledger archive --detach` moves the
-- cut past a partition, it brings each read model's snapshot copy (tables in
-- the `stockledger_snapshot` schema, checkpoint in the `snapshot` slot)
-- forward to the partition's last event, with the read model's own SQL. A
-- rebuild after the cut starts from that copy and replays only what stayed;
-- its check replays the archive's files and the log (`--archive`).
--
-- The snapshot is never read by readers and never moved by the projection
-- workers: only the detach moves it, only forward, and never past the
-- events it has seen settle.

ALTER TABLE projection_checkpoints DROP CONSTRAINT projection_checkpoints_slot_check;
ALTER TABLE projection_checkpoints ADD CONSTRAINT projection_checkpoints_slot_check
    CHECK (slot IN ('live', 'rebuild', 'snapshot'));
