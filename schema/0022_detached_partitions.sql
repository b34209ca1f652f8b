-- Issue 28: archived partitions leave the database (docs/archive.md,
-- decisions 3, 4 and 7). `stockledger archive --detach` (src/seal/detach.rs)
-- detaches and drops the oldest partitions of the log whose every event is
-- in a verified archive segment. What the command path still needs of the
-- events that left is kept here, so that no command takes an archived
-- stream for a new one:
--
-- * the directory: every stream whose events all left, and which was closed
--   by then (its last event is one that closes a stream of its kind). A
--   command that names it is refused (`ARCHIVED`), since its original answer
--   is in the archive; the order an archived reservation held stays held.
-- * carried events: the events that left of every other stream (open at
--   the cut, or closed only later), copied here as they were, so the store
--   still folds the whole stream. A stream's carried rows go once a later
--   detach finds it closed and puts it in the directory.
--
-- Both are written by the owner only; the service reads them.

CREATE TABLE archived_streams (
    stream        text    PRIMARY KEY,
    last_seq      integer NOT NULL CHECK (last_seq >= 1),
    -- Where its last event was: what `stockledger prove POSITION --archive`
    -- takes, and what tells which detach put it here.
    last_position bigint  NOT NULL CHECK (last_position >= 1),
    -- The order a reservation stream held.
    order_id      text
);
CREATE UNIQUE INDEX archived_streams_order ON archived_streams (order_id)
    WHERE order_id IS NOT NULL;

-- A copy of log rows, not the log: the log's own copy of each is in the
-- archive, proved and replayed from there. Same columns as the log, so the
-- store reads both with one list of columns.
CREATE TABLE carried_events (LIKE events INCLUDING CONSTRAINTS);
ALTER TABLE carried_events ADD CONSTRAINT carried_events_pkey PRIMARY KEY (position);
ALTER TABLE carried_events ADD CONSTRAINT carried_events_stream_seq UNIQUE (stream, seq);
CREATE UNIQUE INDEX carried_events_order_once ON carried_events (order_id)
    WHERE type = 'ReservationCreated';

-- Which detach took each partition out, by the archive's last block then.
ALTER TABLE log_partitions ADD COLUMN archived_through_block bigint;

-- Where the log stops being whole, once a partition was detached: every
-- event that left is at or before this cursor in safe commit order, and
-- every event after it is still here. (Not a position: a transaction with
-- an earlier id may hold a later position, so positions below a detached
-- range's end are not a prefix of commit order.) Readers that would answer
-- from part of the log refuse to start before it; the archive holds the
-- rest. No row until the first detach.
CREATE TABLE log_cut (
    only_row boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    tx_id    xid8        NOT NULL,
    position bigint      NOT NULL,
    -- Every position below this left the database.
    floor    bigint      NOT NULL CHECK (floor >= 1),
    cut_at   timestamptz NOT NULL DEFAULT now()
);

REVOKE ALL ON archived_streams, carried_events, log_cut FROM stockledger_service;
GRANT SELECT ON archived_streams, carried_events, log_cut TO stockledger_service;
