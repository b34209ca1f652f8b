-- Where each event relay stands: one row per broker stream it publishes to.
-- The broker stream itself is the truth about what was published (the relay
-- reads its last message on start); this row is what the relay last saw
-- acknowledged, for status, lag and one check: a stream that once received
-- events and is now missing or empty was deleted or purged by an operator,
-- and the relay refuses to republish from the start unless told to.
CREATE TABLE relay_checkpoints (
    stream_name  text        PRIMARY KEY,
    tx_id        bigint      NOT NULL,
    position     bigint      NOT NULL,
    last_msg_id  text        NOT NULL,
    published    bigint      NOT NULL CHECK (published >= 0),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
