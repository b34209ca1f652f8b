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

-- Expected receipts recorded before this migration are on no item's
-- backlog: each joins it at its next event (a change or a delivery), and
-- until then no backorder can draw on it (docs/domain.md says so).

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
