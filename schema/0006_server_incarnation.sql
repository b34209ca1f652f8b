-- Which run of the server this is. The row lives in an UNLOGGED table, which
-- PostgreSQL empties after a crash (and which a promoted standby starts
-- without), so a new id appears after every crash recovery, restart or
-- failover. The command path records it with every transaction: after a
-- crash, a transaction id may be handed out again, so an attempt whose
-- outcome is unknown is resolved by its transaction id only while the server
-- is the same incarnation, and from the log otherwise.
CREATE UNLOGGED TABLE server_incarnation (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    id        uuid    NOT NULL
);

CREATE FUNCTION stockledger_incarnation() RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    current uuid;
BEGIN
    SELECT id INTO current FROM server_incarnation;
    IF current IS NULL THEN
        INSERT INTO server_incarnation (id) VALUES (gen_random_uuid()) ON CONFLICT DO NOTHING;
        SELECT id INTO current FROM server_incarnation;
    END IF;
    RETURN current;
END;
$$;
