-- Write-side balances per item: what the command path locks and decides against.
-- They are a cache of the log, kept in the same transaction as the events that
-- explain every change, and checked by the audit.
CREATE TABLE item_balances (
    sku       text   NOT NULL,
    location  text   NOT NULL,
    on_hand   bigint NOT NULL DEFAULT 0,
    reserved  bigint NOT NULL DEFAULT 0,
    confirmed bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (sku, location),
    -- Never oversold, whatever the code above does.
    CONSTRAINT item_balances_reserved_within_on_hand CHECK (reserved >= 0 AND reserved <= on_hand),
    CONSTRAINT item_balances_confirmed_not_negative CHECK (confirmed >= 0)
);

-- A balance may only change in a transaction that also appended to the log,
-- so that every figure is explained by events. One index probe per statement.
CREATE FUNCTION item_balances_require_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM events WHERE tx_id = pg_current_xact_id()) THEN
        RAISE EXCEPTION 'item balances change only together with the events that explain them'
            USING ERRCODE = 'SL002';
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER item_balances_need_events
    AFTER INSERT OR UPDATE OR DELETE ON item_balances
    FOR EACH STATEMENT EXECUTE FUNCTION item_balances_require_events();
