-- Issue 25, case 5: the log can no longer be back-dated, and a seal covers
-- everything it records about its block.
--
-- 1. The database stamps every event. Before this, `recorded_at` and `tx_id`
--    were whatever an INSERT said (their defaults applied only when it said
--    nothing), so a login in the service role could append an event "recorded"
--    in 2025 under a transaction that never was, and figures of the past
--    changed. Now, whoever inserts:
--
--    tx_id        is always the inserting transaction's own id;
--    recorded_at  is a moment of the inserting transaction's own life: the
--                 value given, moved to no earlier than the transaction's
--                 start and no later than the INSERT statement's start (the
--                 statement's start when none is given).
--
--    Why a window and not one expression: the store decides a command at
--    the database's clock read after its locks are held (src/store/load.rs),
--    and the event must carry that very moment, since the domain's rules hold
--    events to it (an extension's expiry is its `recorded_at` plus its TTL; a
--    confirmation is recorded before the expiry it beat). That reading lies
--    inside the window, so the store's events are stored as it decided them.
--    No expression the trigger could compute gives that moment, and the
--    transaction's start would record a command that waited for a lock
--    before the events it waited for. A forger gets no further than its own
--    transaction's life: an event can never be recorded before the
--    transaction that wrote it began, which is what reads of the past rely
--    on (src/store/horizon.rs: a moment before every open transaction's
--    start is one the log can no longer change at).
--
-- 2. Seal version 2. `last_tx_id`, `last_position` and `sealed_at` were stored
--    beside a seal but not under its hash (0009). Seals made from now on
--    cover them (docs/auditing.md, "The hashes"); the seals made before keep
--    version 1 and verify as they were made: rewriting them would need the
--    digests taken of them to change.

CREATE FUNCTION events_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tx_id := pg_current_xact_id();
    NEW.recorded_at := greatest(transaction_timestamp(),
                                least(coalesce(NEW.recorded_at, statement_timestamp()),
                                      statement_timestamp()));
    RETURN NEW;
END;
$$;

CREATE TRIGGER events_stamp
    BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_stamp();

ALTER TABLE seals
    ADD COLUMN version smallint NOT NULL DEFAULT 1 CHECK (version IN (1, 2));
