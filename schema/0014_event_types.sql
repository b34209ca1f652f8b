-- Every event type and how its rows move the read models, for the SQL folds
-- (`projections/*/apply_*.sql`), which join it instead of spelling event type
-- names. Its rows are written from the Rust definitions each time the schema
-- is migrated (`src/store/event_types.rs`), never by hand: Rust names every
-- event type once (`EventType::ALL`), and this table is how SQL hears it.
--
-- on_hand, reserved, confirmed: the sign (-1, 0 or 1) each of the event's
--   item lines moves that figure by, times the line's quantity as the row
--   stores it (a transfer's lines are signed, a count's line is the change).
-- opens_reservation: the event makes a reservation (its units are held).
-- moves_to: the state a reservation event moves its units to (CONFIRMED,
--   RELEASED, EXPIRED), or NULL.
-- settles: the event moves the whole reservation to `moves_to`.
CREATE TABLE event_types (
    name              text     PRIMARY KEY,
    on_hand           smallint NOT NULL CHECK (on_hand BETWEEN -1 AND 1),
    reserved          smallint NOT NULL CHECK (reserved BETWEEN -1 AND 1),
    confirmed         smallint NOT NULL CHECK (confirmed BETWEEN -1 AND 1),
    opens_reservation boolean  NOT NULL,
    moves_to          text,
    settles           boolean  NOT NULL
);

-- What a fold calls for an event whose type has no row: it fails the batch,
-- so its checkpoint does not move past events it could not fold. (A newer
-- release's event type meets an older release's table: run the newer
-- release's migrations first.)
CREATE FUNCTION event_type_unknown(type_name text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'event type % has no row in event_types; run the migrations of the release that writes it', type_name
        USING ERRCODE = 'P0001';
END;
$$;

-- Anyone connected may read it (every process that migrates compares it with
-- its own definitions; nothing in it is secret); only the owner, through
-- migrations, writes it.
GRANT SELECT ON event_types TO PUBLIC;
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON event_types FROM stockledger_service;
