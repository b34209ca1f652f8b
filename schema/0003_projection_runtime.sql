-- Projection checkpoints: one row per projection and slot. The live slot is
-- what readers see; the rebuild slot exists only while a rebuild runs. A batch
-- of events and its checkpoint are written in the same transaction, so each
-- event takes effect exactly once per projection.
CREATE TABLE projection_checkpoints (
    name           text        NOT NULL,
    slot           text        NOT NULL CHECK (slot IN ('live', 'rebuild')),
    -- The cursor in safe commit order: (writing transaction, position).
    tx_id          xid8        NOT NULL DEFAULT '0'::xid8,
    position       bigint      NOT NULL DEFAULT 0,
    events_applied bigint      NOT NULL DEFAULT 0,
    -- SHA-256 of the definition (schema + apply SQL) the rows were built with.
    definition_checksum text   NOT NULL DEFAULT '',
    -- recorded_at of the last event applied, for lag in seconds.
    last_event_at  timestamptz,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    started_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, slot)
);

-- Wake projection workers when events are committed. Notifications are
-- delivered at commit and collapsed per transaction; polling stays the source
-- of truth, so a lost notification only delays a worker.
CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('stockledger_events', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER events_wake_readers
    AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();
