-- Backorders and pre-orders (docs/domain.md, "Backorders and pre-orders").
--
-- backordered: units ordered that wait for stock to arrive, a fourth figure
--   beside on hand, reserved and confirmed, moved by the backorder events'
--   lines like the others.
-- backlog: what waits for the item and what is expected of it, as the
--   domain keeps it (`domain::backorder::Backlog`, serialised by serde):
--   {"queue": [{"reservation_id", "units"}, ...] in placing order,
--    "incoming": {expected_id: {"on", "units"}}}. It is written whole, from
--   the decided state, in the transaction of the events that change it,
--   and the audit replays it from the log. Its length is capped by the
--   domain (MAX_WAITING_PER_ITEM, MAX_EXPECTED_PER_ITEM).
ALTER TABLE item_balances
    ADD COLUMN backordered bigint NOT NULL DEFAULT 0
        CONSTRAINT item_balances_backordered_not_negative CHECK (backordered >= 0),
    ADD COLUMN backlog jsonb NOT NULL DEFAULT '{}';

-- What the backorder worker scans: only items something waits for.
CREATE INDEX item_balances_waiting ON item_balances (location, sku) WHERE backordered > 0;

-- Expected receipts recorded before this migration join their items'
-- backlogs now, as each one's last event left it (what it still brings and
-- when; a cancelled one or one with nothing outstanding brings nothing), so
-- backorders can draw on them and the audit's replay of the backlogs agrees.
-- The events of expected receipts are the types `event_types` marks
-- `incoming` (schema 18). Balance rows change only beside new events (the
-- trigger of schema 2), so the trigger is off for this one statement.
ALTER TABLE item_balances DISABLE TRIGGER item_balances_need_events;
UPDATE item_balances AS b
SET backlog = jsonb_build_object('queue', '[]'::jsonb, 'incoming', i.due)
FROM (SELECT l.sku, l.location,
             jsonb_object_agg(l.expected_id,
                              jsonb_build_object('on', l.data ->> 'expected_on',
                                                 'units', l.quantities[1])) AS due
      FROM (SELECT DISTINCT ON (e.stream)
                   substr(e.stream, strpos(e.stream, ':') + 1) AS expected_id,
                   e.skus[1] AS sku, e.locations[1] AS location, e.quantities, e.data
            FROM events AS e
            JOIN event_types AS t ON t.name = e.type AND t.incoming
            ORDER BY e.stream, e.seq DESC) AS l
      WHERE l.quantities[1] > 0
      GROUP BY l.sku, l.location) AS i
WHERE b.sku = i.sku AND b.location = i.location;
ALTER TABLE item_balances ENABLE TRIGGER item_balances_need_events;

-- The live `stock_levels` (a read model, made by the runtime from
-- `projections/stock_levels/schema.sql`) gains the figure too, and its
-- `available` subtracts it, so the new fold runs on a database that
-- already has the table; the read model still reports `stale` until
-- rebuilt. A generated column cannot be redefined in place before
-- PostgreSQL 17: it is dropped and added again (0 waits anywhere yet).
DO $$
BEGIN
    IF to_regclass('public.stock_levels') IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name = 'stock_levels'
          AND column_name = 'backordered') THEN
        ALTER TABLE public.stock_levels
            ADD COLUMN backordered bigint NOT NULL DEFAULT 0,
            DROP COLUMN available;
        ALTER TABLE public.stock_levels
            ADD COLUMN available bigint GENERATED ALWAYS AS (on_hand - reserved - backordered) STORED;
    END IF;
END;
$$;

-- The sign each backorder event's lines move `backordered` by, written
-- from Rust's `EventType::line_effect` with the other columns
-- (`src/store/event_types.rs`). The default keeps an older release's
-- inserts, which do not name the column, valid.
ALTER TABLE event_types
    ADD COLUMN backordered smallint NOT NULL DEFAULT 0 CHECK (backordered BETWEEN -1 AND 1);

-- Whether the event adds units to an open reservation (its units placed to
-- wait): `reservation_totals` counts them as RESERVED, the order's, from
-- Rust's `ReservationMove::Adds`.
ALTER TABLE event_types ADD COLUMN adds_units boolean NOT NULL DEFAULT false;
