-- The event log: the one source of truth. Every accepted command appends here;
-- nothing is ever updated or deleted (see the triggers below).
CREATE TABLE events (
    -- Global position, handed out at insert time. Transactions commit in another
    -- order, so readers must not follow positions alone: see tx_id.
    position    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream      text        NOT NULL,
    seq         integer     NOT NULL CHECK (seq >= 1),
    type        text        NOT NULL,
    data        jsonb       NOT NULL,
    metadata    jsonb       NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- The writing transaction. A reader only takes events whose transaction is
    -- older than every transaction still in flight, ordered by (tx_id, position).
    tx_id       xid8        NOT NULL DEFAULT pg_current_xact_id(),
    -- The idempotency key: a retry, a duplicate or a race appends at most one
    -- event per step of a stream.
    CONSTRAINT events_stream_seq_key UNIQUE (stream, seq)
);

-- Safe commit-order reading, and the "did this transaction append?" check below.
CREATE INDEX events_commit_order ON events (tx_id, position);

-- One reservation per order, enforced by the database: the order id of every
-- ReservationCreated is unique across the log.
CREATE UNIQUE INDEX events_order_once ON events ((data ->> 'order_id'))
    WHERE type = 'ReservationCreated';

CREATE FUNCTION events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only: % refused', TG_OP
        USING ERRCODE = 'SL001',
              HINT = 'correct a mistake with a new, compensating event';
END;
$$;

CREATE TRIGGER events_no_update_delete
    BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_refuse_change();

CREATE TRIGGER events_no_truncate
    BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();
