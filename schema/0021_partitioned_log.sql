-- Issue 28: the log and its chain, partitioned by position (events) and by
-- chain sequence (event_chain), so that sealed and archived history can
-- leave the database a whole partition at a time (docs/archive.md).
--
-- Nothing is copied. The table as it is becomes the first partition: its
-- identity is dropped (PostgreSQL 15 has no identity on a partitioned table;
-- the parent takes a sequence default that goes on from the same value),
-- the parent's indexes are created on the parent first, so that attaching
-- adopts the partition's existing indexes instead of building new ones, and
-- the table is read twice under this migration's lock (validating the
-- version check, then attaching checks the range): the whole migration took
-- 480 ms on a million events (docs/archive.md).
--
-- Every later partition is made ahead of time by log_make_room(), below,
-- which the service may call: the sealer calls it on every pass and a write
-- that finds no partition calls it and tries again (src/store/room.rs).

-- How many positions (or chain rows) a partition holds. The partitions
-- made from now on take the value at the time they are made. Large (2^24),
-- because every lookup of a stream or an order by name probes each attached
-- partition (docs/archive.md, "What the number of attached partitions costs").
CREATE TABLE log_partitioning (
    only_row           boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    rows_per_partition bigint  NOT NULL DEFAULT 16777216
        CHECK (rows_per_partition BETWEEN 16 AND 1073741824)
);
INSERT INTO log_partitioning DEFAULT VALUES;

-- Every partition of the log and of the chain there has been: the ranges
-- log_make_room() goes on from; when a full, sealed partition of the log had
-- its indexes rebuilt packed (`stockledger pack`, src/store/pack.rs); and,
-- once a partition was archived and detached, when it left (the table
-- itself is then gone).
CREATE TABLE log_partitions (
    parent      text        NOT NULL CHECK (parent IN ('events', 'event_chain')),
    first       bigint      NOT NULL CHECK (first >= 1),
    next        bigint      NOT NULL,
    name        text        NOT NULL UNIQUE,
    made_at     timestamptz NOT NULL DEFAULT now(),
    packed_at   timestamptz,
    detached_at timestamptz,
    PRIMARY KEY (parent, first),
    CHECK (next > first)
);

-- The first partitions: the tables as they are, under the names they get
-- here. Their row triggers are dropped because the parent's are cloned
-- onto every partition, this one included, when it is attached.
ALTER TABLE events RENAME TO events_history;
ALTER TABLE events_history RENAME CONSTRAINT events_pkey TO events_history_pkey;
ALTER TABLE events_history RENAME CONSTRAINT events_stream_seq_key TO events_history_stream_seq;
ALTER INDEX events_commit_order RENAME TO events_history_commit_order;
ALTER INDEX events_order_once RENAME TO events_history_order_once;
ALTER INDEX events_items RENAME TO events_history_items;
DROP TRIGGER events_no_update_delete ON events_history;
DROP TRIGGER events_stamp ON events_history;
-- A partition's CHECK must be valid to match the parent's.
ALTER TABLE events_history VALIDATE CONSTRAINT events_version_from_1;

ALTER TABLE event_chain RENAME TO event_chain_history;
ALTER TABLE event_chain_history RENAME CONSTRAINT event_chain_pkey TO event_chain_history_pkey;
ALTER TABLE event_chain_history RENAME CONSTRAINT event_chain_position_key TO event_chain_history_position;
DROP TRIGGER event_chain_no_update_delete ON event_chain_history;
DROP TRIGGER event_chain_reads_versions ON event_chain_history;

-- The position goes on from where the identity was.
CREATE SEQUENCE events_position AS bigint;
-- (The identity's sequence kept its name when the table was renamed.)
SELECT setval('events_position', last_value, is_called) FROM events_position_seq;
ALTER TABLE events_history ALTER COLUMN position DROP IDENTITY;

CREATE TABLE events (LIKE events_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (position);
ALTER TABLE events ALTER COLUMN position SET DEFAULT nextval('events_position');
ALTER SEQUENCE events_position OWNED BY events.position;
ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (position);
CREATE INDEX events_commit_order ON events (tx_id, position);
CREATE INDEX events_items ON events USING gin (skus);

CREATE TABLE event_chain (LIKE event_chain_history INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (seq);
ALTER TABLE event_chain ADD CONSTRAINT event_chain_pkey PRIMARY KEY (seq);

-- What PostgreSQL cannot enforce across partitions: a unique index holds
-- within one partition only. The command path's advisory locks keep two
-- appends of one stream step, or two reservations of one order, apart (one
-- transaction per stream and per order, which loads the stream from every
-- partition before it appends); each partition's unique indexes are the
-- backstop where racing appends land (positions are handed out in order, so
-- both land in the newest partition, but for two that straddle its end). A
-- row trigger probing the older partitions was tried and measured: one
-- probe per partition per appended row, 8 to 227 times the cost of the
-- insert (docs/archive.md, decision 2), so it is not here. The audit names a
-- doubled step, or a second reservation of an order, in any partitions.
-- The chain's `position` is likewise unique per partition only: the sealer
-- chains under its own lock, and `verify` recomputes the chain from the log.

-- One partition, made and attached. The per-partition unique indexes are
-- made here because a partitioned parent can hold no unique index that
-- leaves out its partition key; the primary key and the row triggers come
-- from the parent when the partition is attached. Attaching
-- takes only SHARE UPDATE EXCLUSIVE on the parent, so appends go on, and an
-- empty table's range needs no scan.
CREATE FUNCTION log_add_partition(parent text, first bigint, next bigint) RETURNS text
LANGUAGE plpgsql SET search_path = public, pg_temp AS $$
DECLARE
    name text := format('%s_from_%s', parent, first);
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING CONSTRAINTS)', name, parent);
    IF parent = 'events' THEN
        -- Made before attaching, under names that say what they are,
        -- so that attaching adopts them rather than naming its own.
        EXECUTE format('CREATE INDEX %I ON %I (tx_id, position)', name || '_commit_order', name);
        EXECUTE format('CREATE INDEX %I ON %I USING gin (skus)', name || '_items', name);
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I UNIQUE (stream, seq)',
                       name, name || '_stream_seq');
        EXECUTE format('CREATE UNIQUE INDEX %I ON %I (order_id) WHERE type = %L',
                       name || '_order_once', name, 'ReservationCreated');
    ELSE
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I UNIQUE (position)',
                       name, name || '_position');
    END IF;
    -- Statement triggers are not cloned: a partition refuses TRUNCATE itself.
    EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I
                    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change()',
                   parent || '_no_truncate', name);
    -- The service appends through the parent only; a partition is the owner's.
    EXECUTE format('REVOKE ALL ON %I FROM stockledger_service', name);
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                   parent, name, first, next);
    INSERT INTO log_partitions (parent, first, next, name) VALUES (parent, first, next, name);
    RETURN name;
END;
$$;

-- Makes partitions ahead: whenever what is used of the log (or the chain)
-- has passed half of the last partition, the next one is made, so that an
-- append almost never finds no room; `ahead` asks for room for that many
-- rows more (an append of a large batch, a sealer's block), at most 65,536.
-- Returns how many partitions it made. Callers are serialised by an
-- advisory lock; its waits are bounded by lock_timeout, 2 s, inside the
-- store's 3-second attempt (TRANSACTION_ATTEMPT_DEADLINE_MS). It reads what
-- the last caller made after taking the lock, so it must run in READ
-- COMMITTED (a later snapshot per statement), and refuses otherwise.
CREATE FUNCTION log_make_room(ahead bigint DEFAULT 0) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp SET lock_timeout = '2s' AS $$
DECLARE
    size bigint := (SELECT rows_per_partition FROM log_partitioning);
    made integer := 0;
    used bigint;
    top bigint;
    t text;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'log_make_room() runs in READ COMMITTED only, not %',
            current_setting('transaction_isolation');
    END IF;
    -- A key of its own (no other lock of the ledger uses it).
    PERFORM pg_advisory_xact_lock(7346712890155112028);
    FOREACH t IN ARRAY ARRAY['events', 'event_chain'] LOOP
        IF t = 'events' THEN
            SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
              INTO used FROM events_position;
        ELSE
            SELECT coalesce(max(seq), 0) INTO used FROM event_chain;
        END IF;
        -- `used + 1` is the next row's place. Positions below it that no
        -- partition holds were handed out to appends that failed for want
        -- of one; they are left as a gap, so that a partition size made
        -- smaller, or a long stop of the sealer, never needs more than two
        -- partitions at once.
        top := greatest(coalesce((SELECT max(next) FROM log_partitions WHERE parent = t), 1),
                        used + 1);
        -- Half a partition ahead of the next row, or `ahead`, there must be room.
        WHILE top <= used + 1 + greatest(size / 2, least(ahead, 65536)) LOOP
            PERFORM log_add_partition(t, top, top + size);
            made := made + 1;
            top := top + size;
        END LOOP;
    END LOOP;
    RETURN made;
END;
$$;
REVOKE ALL ON FUNCTION log_make_room(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION log_make_room(bigint) TO stockledger_service;
REVOKE ALL ON FUNCTION log_add_partition(text, bigint, bigint) FROM PUBLIC;

-- The first partitions cover what exists: positions 1 up to the last one
-- handed out (the chain: up to its last row). An empty table is simply
-- dropped; log_make_room() below makes the first range.
DO $$
DECLARE
    used bigint;
BEGIN
    SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END INTO used
      FROM events_position;
    IF used > 0 THEN
        EXECUTE format('ALTER TABLE events ATTACH PARTITION events_history FOR VALUES FROM (1) TO (%s)',
                       used + 1);
        INSERT INTO log_partitions (parent, first, next, name)
            VALUES ('events', 1, used + 1, 'events_history');
    ELSE
        DROP TABLE events_history;
    END IF;
    SELECT coalesce(max(seq), 0) INTO used FROM event_chain_history;
    IF used > 0 THEN
        EXECUTE format('ALTER TABLE event_chain ATTACH PARTITION event_chain_history FOR VALUES FROM (1) TO (%s)',
                       used + 1);
        INSERT INTO log_partitions (parent, first, next, name)
            VALUES ('event_chain', 1, used + 1, 'event_chain_history');
    ELSE
        DROP TABLE event_chain_history;
    END IF;
END $$;

-- The parent's triggers, as the tables had them; row triggers are cloned
-- onto every partition.
CREATE TRIGGER events_no_update_delete
    BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER events_no_truncate
    BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER events_stamp
    BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_stamp();
CREATE TRIGGER event_chain_no_update_delete
    BEFORE UPDATE OR DELETE ON event_chain
    FOR EACH ROW EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER event_chain_no_truncate
    BEFORE TRUNCATE ON event_chain
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER event_chain_reads_versions
    AFTER INSERT ON event_chain
    REFERENCING NEW TABLE AS chained
    FOR EACH STATEMENT EXECUTE FUNCTION event_chain_reads_versions();

-- The service appends and reads, as before; it changes nothing.
REVOKE ALL ON events, event_chain, log_partitioning, log_partitions FROM stockledger_service;
GRANT SELECT, INSERT ON events, event_chain TO stockledger_service;
GRANT SELECT ON log_partitioning, log_partitions TO stockledger_service;
DO $$
BEGIN
    IF to_regclass('events_history') IS NOT NULL THEN
        REVOKE ALL ON events_history FROM stockledger_service;
    END IF;
    IF to_regclass('event_chain_history') IS NOT NULL THEN
        REVOKE ALL ON event_chain_history FROM stockledger_service;
    END IF;
END $$;

SELECT log_make_room();
